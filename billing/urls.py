from django.urls import path

from . import views

urlpatterns = [
    path("orgs/<slug:org_slug>/catalog/", views.catalog, name="catalog"),
]
