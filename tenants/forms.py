from django import forms

from .accounts import sso_providers
from .models import (
    ORGANIZATION_SLUG_MAX,
    PROJECT_SLUG_MAX,
    ApiToken,
    Role,
    slug_validator,
)


class OrganizationCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    slug = forms.CharField(
        max_length=ORGANIZATION_SLUG_MAX,
        min_length=2,
        validators=[slug_validator],
        help_text="Used in URLs and Kubernetes namespaces; cannot change later.",
    )
    billing_email = forms.EmailField(required=False)


class ProjectCreateForm(forms.Form):
    name = forms.CharField(max_length=100)
    slug = forms.CharField(
        max_length=PROJECT_SLUG_MAX,
        min_length=2,
        validators=[slug_validator],
        help_text="The namespace is <organization>-<slug>.",
    )
    description = forms.CharField(max_length=2000, required=False, widget=forms.Textarea)


class InvitationForm(forms.Form):
    email = forms.EmailField()
    role = forms.ChoiceField(choices=Role.choices, initial=Role.MEMBER)


class RoleChangeForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)


class TokenIssueForm(forms.Form):
    name = forms.CharField(max_length=100)
    scope = forms.ChoiceField(choices=ApiToken.TENANT_SCOPES, initial=ApiToken.Scope.READ)
    expires_at = forms.DateTimeField(
        required=False,
        help_text="UTC, e.g. 2027-01-31 18:00. Empty: never expires.",
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
    )


class SsoForm(forms.Form):
    """An organization's single sign-on requirement (owners)."""

    provider = forms.ChoiceField(
        required=False,
        label="Require sign-in through",
        help_text="Members then reach this organization only when signed in through it.",
    )
    domains = forms.CharField(
        required=False,
        max_length=2000,
        label="Allowed e-mail domains",
        help_text="Invitations go to these domains only, e.g. example.com, example.org."
        " Empty: any.",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["provider"].choices = [("", "Not required"), *sso_providers().items()]

    def clean_domains(self) -> list[str]:
        return self.cleaned_data["domains"].replace(",", " ").split()
