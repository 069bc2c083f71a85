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
