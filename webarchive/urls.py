from csp.decorators import csp_update
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from storage.views import replay_endpoints, replay_misses
from webarchive import oidc, views

urlpatterns = [
    path("", views.HomeView.as_view(), name="home"),
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("account/", views.AccountView.as_view(), name="account"),
    path("account/token/", views.TokenRegenerateView.as_view(), name="account-token"),
    path("language/", views.LanguageView.as_view(), name="language"),
    path("selection/", include("selection.urls")),
    path("harvest/", include("harvest.urls")),
    # A job's quality review: reads the job (harvest) and its captures (storage), so storage serves it.
    path("harvest/", include("storage.views.quality")),
    path("access/", include("storage.urls")),
    path("reports/", include("harvest.views.reports")),
    # What the replay process reads (machine endpoints: 401, not the login page).
    path("cdx", replay_endpoints.cdx, name="cdx"),
    path("warcs/<path:filename>", replay_endpoints.warc_bytes, name="warc_bytes"),
    path("replay-misses", replay_misses.replay_misses, name="replay_misses"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # The docs page is for people: send them to the login page, not a 401. Its script is a file of its
    # own (the split view: the page's script is ?script), but its page keeps a <style> block: styles
    # may be inline on this page alone (settings.CONTENT_SECURITY_POLICY).
    path(
        "api/docs/",
        login_required(
            csp_update({"style-src": ["'unsafe-inline'"]})(
                SpectacularSwaggerSplitView.as_view(url_name="api-schema")
            )
        ),
        name="api-docs",
    ),
    path("api/", include("webarchive.api_urls")),
    path("admin/", admin.site.urls),
    path("i18n/", include("django.conf.urls.i18n")),
    # Single sign-on (OpenID Connect), when configured (webarchive.oidc_settings).
    path("oidc/authenticate/", oidc.LoginStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", oidc.LoginCallbackView.as_view(), name="oidc_authentication_callback"),
    # Area landing pages last: "/selection/" etc. list the pages of that area.
    path("<slug:area>/", views.AreaView.as_view(), name="area"),
]
