"""Form helpers shared by all apps."""

from django import forms


def add_bootstrap_classes(form: forms.BaseForm, *, small: bool = False) -> forms.BaseForm:
    """Give every widget of a form its Bootstrap class (the filter forms of lists too); asking again
    (a form that adds fields after its first pass) gives each its class once."""
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
        if css.split()[0] not in widget.attrs.get("class", "").split():  # given once, however often asked
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
