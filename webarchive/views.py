"""Shared views: the role mixins, the generic object views, home, areas and the account page.

An app's views declare ``area``, ``queryset`` and, for lists, ``filterset_class``
and ``columns``; the generic views do the rest, always through
``webarchive.permissions`` so that a page never shows what its user may not see.
"""

import datetime

from django.contrib.auth import views as auth_views
from django.contrib.auth.mixins import AccessMixin
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.http import Http404
from django.shortcuts import redirect
from django.utils import timezone
from django.utils.formats import date_format
from django.utils.translation import gettext_lazy as _
from django.views.generic import DetailView, FormView, ListView, TemplateView, View
from rest_framework.authtoken.models import Token

from webarchive import home
from webarchive.forms import add_bootstrap_classes
from webarchive.history import history_entries
from webarchive.navigation import pages_for, saved_searches_for
from webarchive.permissions import VIEW, Area, can, can_enter, restrict


def display_value(obj, name: str):
    """A field's value as people read it: the label of a choice, not its code."""
    get_display = getattr(obj, f"get_{name}_display", None)
    value = get_display() if get_display else getattr(obj, name)
    if isinstance(value, bool):
        return _("yes") if value else _("no")
    if isinstance(value, datetime.datetime):
        return date_format(timezone.localtime(value), "Y-m-d H:i:s")
    return "—" if value in (None, "") else value


class AreaRequiredMixin(AccessMixin):
    """Opens a view to the roles of its ``area``; anyone else gets 403.

    ``model_permission = (action, Model)`` narrows it further to the roles that
    may do that action on that model, with ``permission_denied_message`` as the
    reason given.
    """

    area: Area | None = None
    model_permission: tuple[str, type] | None = None
    permission_denied_message = _("Your role does not allow this.")

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        area = self.get_area()
        if area is None:
            raise ImproperlyConfigured(f"{type(self).__name__} must declare an area.")
        if not can_enter(request.user, area):
            raise PermissionDenied(_("Your role does not give access to %(area)s.") % {"area": area.label})
        if self.model_permission is not None and not can(request.user, *self.model_permission):
            raise PermissionDenied(self.permission_denied_message)
        return super().dispatch(request, *args, **kwargs)

    def get_area(self) -> Area | None:
        return self.area


class RestrictedQuerysetMixin(AreaRequiredMixin):
    """Narrows ``queryset`` to what the user may do; no permission at all is a 403."""

    action = VIEW

    def get_queryset(self):
        queryset = super().get_queryset()
        if not can(self.request.user, self.action, queryset.model):
            raise PermissionDenied(_("Your role does not allow this."))
        return restrict(queryset, self.request.user, self.action)


class ObjectListView(RestrictedQuerysetMixin, ListView):
    """A filtered, paginated table of objects."""

    template_name = "webarchive/object_list.html"
    paginate_by = 50
    filterset_class = None
    columns: list[str] = []  # field names shown as columns; the first links to the object

    def get_queryset(self):
        queryset = super().get_queryset()
        self.filterset = None
        if self.filterset_class is not None:
            self.filterset = self.filterset_class(self.request.GET, queryset=queryset, request=self.request)
            add_bootstrap_classes(self.filterset.form, small=True)
            queryset = self.filterset.qs
        return queryset

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        meta = self.model._meta if self.model else self.object_list.model._meta
        paginator = context.get("paginator")
        context.update(
            {
                "result_count": paginator.count if paginator else len(context["object_list"]),
                "filterset": self.filterset,
                "verbose_name_plural": meta.verbose_name_plural,
                "headers": [meta.get_field(name).verbose_name for name in self.columns],
                "rows": [
                    (obj, [display_value(obj, name) for name in self.columns])
                    for obj in context["object_list"]
                ],
            }
        )
        return context


class ObjectDetailView(RestrictedQuerysetMixin, DetailView):
    """One object, its fields and its change history."""

    template_name = "webarchive/object_detail.html"
    fields: list[str] = []

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        meta = self.object._meta
        context["verbose_name"] = meta.verbose_name
        context["field_rows"] = [
            (meta.get_field(name).verbose_name, display_value(self.object, name)) for name in self.fields
        ]
        context["history"] = history_entries(self.object)
        return context


class ServiceFormView(AreaRequiredMixin, FormView):
    """A form whose valid data is handed to one service.

    Subclasses implement ``perform(form)`` (call the service, return the object
    or a redirect URL). A ``ValidationError`` from the service is shown at the
    fields it names (or at the top), and a ``PermissionDenied`` is a 403:
    the service, not the page, decides.
    """

    template_name = "webarchive/form.html"
    title = ""
    submit_label = _("Save")

    def perform(self, form):
        raise NotImplementedError

    def form_valid(self, form):
        try:
            result = self.perform(form)
        except ValidationError as error:
            apply_validation_error(form, error)
            return self.form_invalid(form)
        if isinstance(result, str):
            return redirect(result)
        if hasattr(result, "get_absolute_url"):
            return redirect(result.get_absolute_url())
        return redirect(self.get_success_url())

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context.setdefault("title", self.title)
        context.setdefault("submit_label", self.submit_label)
        return context


def apply_validation_error(form, error: ValidationError) -> None:
    """Put a service's ValidationError on the form: at each field it names that the form has, else on top."""
    if hasattr(error, "error_dict"):
        for field, errors in error.error_dict.items():
            for item in errors:
                form.add_error(field if field in form.fields else None, item)
    else:
        for message in error.messages:
            form.add_error(None, message)


class HomeView(TemplateView):
    """What each of the user's roles has to do next."""

    template_name = "webarchive/home.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["cards"] = home.cards_for(self.request.user)
        return context


class AreaView(AreaRequiredMixin, TemplateView):
    """The landing page of an area: the pages in it that the user may open."""

    template_name = "webarchive/area.html"

    def get_area(self):
        try:
            return Area(self.kwargs["area"])
        except ValueError:
            raise Http404 from None

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        area = self.get_area()
        context.update(
            {
                "area": area,
                "pages": pages_for(self.request.user, area),
                "searches": saved_searches_for(self.request.user, area),
            }
        )
        return context


class AccountView(TemplateView):
    """The user's own account: roles, and the token for the REST API."""

    template_name = "webarchive/account.html"

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["token"] = Token.objects.filter(user=self.request.user).first()
        return context


class TokenRegenerateView(View):
    """Replace the user's API token (POST only); the old one stops working at once."""

    def post(self, request):
        from webarchive.services import user_token_regenerate

        user_token_regenerate(user=request.user)
        return redirect("account")


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True
