import factory
from allauth.account.models import EmailAddress
from django.contrib.auth import get_user_model

from tenants.models import Membership, Organization, Project, Role

PASSWORD = "correct-horse-battery"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.Sequence(lambda n: f"user{n}@example.com")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def verified_email(user, create, extracted, **kwargs):
        if create:
            user.save()
            EmailAddress.objects.create(user=user, email=user.email, primary=True, verified=True)


class OrganizationFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Organization

    slug = factory.Sequence(lambda n: f"org{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class MembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Membership

    organization = factory.SubFactory(OrganizationFactory)
    user = factory.SubFactory(UserFactory)
    role = Role.MEMBER


class ProjectFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Project

    organization = factory.SubFactory(OrganizationFactory)
    slug = factory.Sequence(lambda n: f"project{n}")
    name = factory.LazyAttribute(lambda p: p.slug.title())
    namespace = factory.LazyAttribute(lambda p: f"{p.organization.slug}-{p.slug}")


def h100_reservation_offered(operator, *, name: str = "H100 reserved"):
    """Reserved H100-hours at 2.4650 in the catalog since yesterday, as an operator adds them
    (the H100-80GB class must exist)."""
    return _h100_offered(
        operator, slug="h100-reserved", name=name, kind="reservation", price="2.4650"
    )


def h100_on_demand_offered(operator):
    """H100-hours on demand at 2.9000, for every tier, as ``h100_reservation_offered``."""
    return _h100_offered(
        operator, slug="h100-on-demand", name="H100 on demand", kind="on_demand", price="2.9000"
    )


def _h100_offered(operator, *, slug: str, name: str, kind: str, price: str):
    from datetime import timedelta
    from decimal import Decimal

    from billing import services
    from billing.models import CatalogItem
    from portal import clock
    from scheduling.models import GpuClass
    from tenants.permissions import Caller

    item = services.catalog_item_save(
        caller=Caller(user=operator),
        item=CatalogItem(
            slug=slug,
            name=name,
            kind=kind,
            gpu_class=GpuClass.objects.get(name="H100-80GB"),
            active_from=clock.now() - timedelta(days=1),
        ),
    )
    services.price_version_add(caller=Caller(user=operator), item=item, unit_price=Decimal(price))
    return item
