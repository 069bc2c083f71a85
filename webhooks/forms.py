from django import forms

from .models import EventType


class EndpointForm(forms.Form):
    url = forms.URLField(max_length=2000, label="URL", assume_scheme="https")
    description = forms.CharField(max_length=200, required=False)
    event_types = forms.MultipleChoiceField(
        choices=EventType.choices, widget=forms.CheckboxSelectMultiple
    )
    secret = forms.CharField(
        max_length=200,
        required=False,
        help_text="Leave empty and the portal generates one (shown once).",
    )
