from django.contrib.auth import views as auth_views
from django.http import HttpResponse
from django.template import engines
from django.urls import include, path

LOGIN = engines["django"].from_string(
    '<form method="post" action="">{% csrf_token %}{{ form.as_p }}'
    '<input type="hidden" name="next" value="{{ next }}"><button type="submit">Sign in</button></form>'
)


class Login(auth_views.LoginView):
    def render_to_response(self, context, **kwargs):
        return HttpResponse(LOGIN.render(context, self.request))


urlpatterns = [
    path("login/", Login.as_view(), name="login"),
    path("openid/", include("oidc_provider.urls", namespace="oidc_provider")),
]
