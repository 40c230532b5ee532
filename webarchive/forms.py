"""Form helpers shared by all apps."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _


def add_bootstrap_classes(form: forms.BaseForm, *, small: bool = False) -> forms.BaseForm:
    """Give every widget of a form its Bootstrap class (the filter forms of lists too)."""
    size = "-sm" if small else ""
    for field in form.fields.values():
        widget = field.widget
        if isinstance(widget, forms.CheckboxInput | forms.CheckboxSelectMultiple | forms.RadioSelect):
            css = "form-check-input"
        elif isinstance(widget, forms.Select | forms.SelectMultiple):
            css = f"form-select form-select{size}" if size else "form-select"
        else:
            css = f"form-control form-control{size}" if size else "form-control"
        if isinstance(widget, forms.SelectMultiple):
            widget.attrs.setdefault("size", min(4, len(getattr(field, "choices", [])) or 4))
        widget.attrs["class"] = f"{widget.attrs.get('class', '')} {css}".strip()
        if isinstance(widget, forms.DateInput):
            widget.input_type = "date"
    return form


class BootstrapMixin:
    """Gives every widget its Bootstrap class, and marks invalid fields."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        add_bootstrap_classes(self)

    def add_error(self, field, error):
        # Every error goes through here: the form's own checks and a service's
        # (webarchive.views.apply_validation_error), so both mark their fields.
        super().add_error(field, error)
        for name in self._errors or ():
            if name in self.fields:
                widget = self.fields[name].widget
                if "is-invalid" not in widget.attrs.get("class", ""):
                    widget.attrs["class"] = f"{widget.attrs.get('class', '')} is-invalid".strip()


class SeenVersionMixin:
    """Carries the ``updated_at`` of the object as the form showed it, so that a save can refuse to
    overwrite a change someone else made in the meantime (see ``unchanged_since``)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["seen"] = forms.CharField(widget=forms.HiddenInput, required=False)
        if self.instance.pk is not None:
            self.fields["seen"].initial = self.instance.updated_at.isoformat()

    def clean(self):
        data = super().clean()
        self.seen = data.pop("seen", "")
        return data


def unchanged_since(obj, seen: str) -> None:
    """Lock the stored row and raise ValidationError if it changed since the form showed ``seen``.

    Call inside the transaction that saves, so that nobody can slip in between.
    """
    current = type(obj).objects.select_for_update().get(pk=obj.pk)
    if current.updated_at.isoformat() != seen:
        raise ValidationError(
            _(
                "Someone else changed this %(what)s since you opened this page: nothing was saved. "
                "Reload the page to see their changes, then make yours again."
            )
            % {"what": type(obj)._meta.verbose_name},
            code="concurrent_edit",
        )
