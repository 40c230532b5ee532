"""Anonymous users are sent to the login page everywhere but the login page itself; a person who
chose an interface language gets it on every page, whatever the browser says."""

from django.conf import settings
from django.contrib.auth import middleware as auth_middleware
from django.shortcuts import resolve_url
from django.utils import translation
from rest_framework.views import APIView


class LoginRequiredMiddleware(auth_middleware.LoginRequiredMiddleware):
    """Django's LoginRequiredMiddleware, leaving REST API views to their own authentication.

    API clients authenticate with a token inside the view (DRF), which this
    middleware cannot see; the API's permission classes refuse anonymous
    requests with 401 instead of a redirect a script cannot follow.
    """

    def process_view(self, request, view_func, view_args, view_kwargs):
        view_class = getattr(view_func, "cls", None)
        if isinstance(view_class, type) and issubclass(view_class, APIView):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)

    def get_login_url(self, view_func):
        # One login page for everything, the admin included (it would send to its own).
        return resolve_url(settings.LOGIN_URL)


SESSION_LANGUAGE = "webarchive_language"  # the person's chosen language, read once per session


def remember_language(request, user) -> None:
    """Keep the person's chosen language ("" : the browser's) in their session."""
    from webarchive.models import UserPreference

    chosen = UserPreference.objects.filter(user=user).values_list("language", flat=True).first()
    request.session[SESSION_LANGUAGE] = chosen or ""


class UserLanguageMiddleware:
    """After authentication: the language the person chose (webarchive.models.UserPreference), put in
    the session at login (webarchive.apps), replaces the one LocaleMiddleware took from the cookie or the
    browser. Visitors who are not logged in keep those."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            if SESSION_LANGUAGE not in request.session:  # a session from before the login hook
                remember_language(request, user)
            language = request.session[SESSION_LANGUAGE]
            if language:
                translation.activate(language)
                request.LANGUAGE_CODE = translation.get_language()
        return self.get_response(request)
