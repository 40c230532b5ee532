"""The shared form helpers."""

from django import forms

from webarchive.forms import BootstrapMixin


class ChoiceForm(BootstrapMixin, forms.Form):
    choice = forms.ChoiceField(choices=[])
    name = forms.CharField()
    agree = forms.BooleanField(required=False)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["choice"].choices = [("a", "A")]  # set after the mixin, as real forms do


def test_a_bound_form_is_validated_with_the_choices_its_subclass_sets():
    form = ChoiceForm({"choice": "a", "name": "x"})
    assert form.is_valid(), form.errors


def test_widgets_get_bootstrap_classes_and_invalid_fields_are_marked():
    form = ChoiceForm({"choice": "b"})
    assert not form.is_valid()
    assert form.fields["choice"].widget.attrs["class"] == "form-select is-invalid"
    assert form.fields["name"].widget.attrs["class"] == "form-control is-invalid"
    assert form.fields["agree"].widget.attrs["class"] == "form-check-input"


def test_a_field_a_service_refuses_is_marked_too():
    from django.core.exceptions import ValidationError

    from webarchive.views import apply_validation_error

    form = ChoiceForm({"choice": "a", "name": "x"})
    assert form.is_valid()
    apply_validation_error(form, ValidationError({"name": "Taken."}))
    assert form.fields["name"].widget.attrs["class"] == "form-control is-invalid"
    assert form.fields["choice"].widget.attrs["class"] == "form-select"
