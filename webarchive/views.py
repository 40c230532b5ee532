"""Shared views: the role mixins, the generic object views, home, areas and the account page.

An app's views declare ``area``, ``queryset`` and, for lists, ``filterset_class``
and ``table_class`` (the app's ``tables.py``); the actions a page offers are declared
once (``PermittedActionsMixin.actions``); the generic views do the rest, always through
``webarchive.permissions`` so that a page never shows what its user may not see. A
``next`` target is followed only through :func:`safe_next_url`.
"""

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_not_required
from django.contrib.auth.mixins import AccessMixin
from django.core.exceptions import ImproperlyConfigured, PermissionDenied, ValidationError
from django.http import Http404, HttpResponseBadRequest
from django.shortcuts import redirect, resolve_url
from django.utils.cache import patch_vary_headers
from django.utils.decorators import method_decorator
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.translation import gettext_lazy as _
from django.views.generic import DetailView, FormView, ListView, TemplateView, View
from rest_framework.authtoken.models import Token

from webarchive import home
from webarchive.forms import add_bootstrap_classes
from webarchive.history import history_entries
from webarchive.middleware import SESSION_LANGUAGE
from webarchive.navigation import pages_for, saved_searches_for
from webarchive.permissions import (
    VIEW,
    Area,
    Role,
    can,
    can_enter,
    is_administrator,
    permitted,
    restrict,
    user_roles,
)
from webarchive.services import user_language_set, user_token_regenerate
from webarchive.tables import Column, Table, display_value


def htmx_response(request, response):
    """The fragment and the page share a URL: caches must keep them apart."""
    patch_vary_headers(response, ["HX-Request"])
    return response


def safe_next_url(request, default) -> str:
    """Where to send the user after an action: the ``next`` it was given (POST, else GET) when that
    is a page of this site, else ``default`` (a URL, a URL name or an object with a URL).

    ``next`` comes from the form, so anyone can forge it: an address on another host, a
    scheme-relative ``//host`` or ``/\\host`` (which browsers read as ``//host``) or a
    ``javascript:`` URL would make this site a springboard; they all give ``default``.
    """
    target = request.POST.get("next") or request.GET.get("next") or ""
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return target
    return resolve_url(default)


def redirect_next(request, default):
    """A redirect to :func:`safe_next_url`."""
    return redirect(safe_next_url(request, default))


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


class PermittedActionsMixin:
    """Declares what can be done from a page, once: ``actions`` names permissions (``ADD``,
    ``CHANGE``…) and the template reads ``permitted.<action>``, answered by
    :func:`webarchive.permissions.permitted` for the page's object (``self.object``) or, on a list,
    its model. Whether an action fits the object's state (a job that can still be stopped) is the
    transition table's to say (webarchive.transitions), not a permission."""

    actions: tuple[str, ...] = ()

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        subject = getattr(self, "object", None) or getattr(self, "model", None)
        if subject is None and getattr(self, "object_list", None) is not None:
            subject = self.object_list.model
        context["permitted"] = (
            permitted(self.request.user, subject, self.actions) if subject is not None else {}
        )
        return context


class RestrictedQuerysetMixin(AreaRequiredMixin):
    """Narrows ``queryset`` to what the user may do; no permission at all is a 403."""

    action = VIEW

    def get_queryset(self):
        queryset = super().get_queryset()
        if not can(self.request.user, self.action, queryset.model):
            raise PermissionDenied(_("Your role does not allow this."))
        return restrict(queryset, self.request.user, self.action)


class ObjectListView(RestrictedQuerysetMixin, ListView):
    """A filtered, paginated table of objects: the table is declared (``table_class``, see
    webarchive.tables), or, for the simplest lists, ``columns`` names the fields (the first links)."""

    template_name = "webarchive/object_list.html"
    paginate_by = 50
    filterset_class = None
    table_class: type[Table] | None = None
    columns: list[str] = []

    def get_queryset(self):
        queryset = super().get_queryset()
        self.filterset = None
        if self.filterset_class is not None:
            self.filterset = self.filterset_class(self.request.GET, queryset=queryset, request=self.request)
            add_bootstrap_classes(self.filterset.form, small=True)
            queryset = self.filterset.qs
        return queryset

    def get_table_class(self) -> type[Table]:
        if self.table_class is not None:
            return self.table_class
        columns = tuple(Column(name, link=index == 0) for index, name in enumerate(self.columns))
        return type("Table", (Table,), {"columns": columns})

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        model = self.model or self.object_list.model
        paginator = context.get("paginator")
        context.update(
            {
                "result_count": paginator.count if paginator else len(context["object_list"]),
                "filterset": self.filterset,
                "verbose_name_plural": model._meta.verbose_name_plural,
                "table": self.get_table_class()(context["object_list"], model=model, user=self.request.user),
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
    """What each of the user's roles has to do next; readers, who only read, go to the reading room."""

    template_name = "webarchive/home.html"

    def get(self, request, *args, **kwargs):
        user = request.user
        if not is_administrator(user) and user_roles(user) == {Role.READER}:
            return redirect("storage:reading_room")
        return super().get(request, *args, **kwargs)

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


@method_decorator(login_not_required, name="dispatch")  # visitors choose their language too
class LanguageView(View):
    """Choose the interface language (POST ``language``, ``next``): remembered for the person (every
    session, every browser) and in a cookie for a visitor who is not logged in. An empty choice goes
    back to the browser's language."""

    def post(self, request):
        language = request.POST.get("language", "")
        if language and language not in dict(settings.LANGUAGES):
            return HttpResponseBadRequest(
                _("“%(code)s” is not a language of this site.") % {"code": language[:20]},
                content_type="text/plain; charset=utf-8",
            )
        if request.user.is_authenticated:
            user_language_set(user=request.user, language=language)
            request.session[SESSION_LANGUAGE] = language
        response = redirect(safe_next_url(request, "home"))
        if language:
            response.set_cookie(
                settings.LANGUAGE_COOKIE_NAME,
                language,
                max_age=settings.LANGUAGE_COOKIE_AGE,
                samesite="Lax",
                secure=request.is_secure(),
            )
        else:
            response.delete_cookie(settings.LANGUAGE_COOKIE_NAME)
        return response


class TokenRegenerateView(View):
    """Replace the user's API token (POST only); the old one stops working at once."""

    def post(self, request):
        user_token_regenerate(user=request.user)
        return redirect("account")


class LoginView(auth_views.LoginView):
    template_name = "registration/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        # Single sign-on (OpenID Connect) beside the password form, when it is configured.
        context["single_sign_on"] = settings.OIDC_PROVIDER_NAME if settings.OIDC_RP_CLIENT_ID else ""
        return context
