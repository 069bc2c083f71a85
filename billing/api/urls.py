from django.urls import path

from . import views

urlpatterns = [
    path("organizations/<slug:org_slug>/catalog/", views.CatalogListApi.as_view(), name="catalog"),
]
