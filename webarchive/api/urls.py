"""The REST API: one router for every app's viewsets."""

from django.urls import path
from rest_framework.authtoken.views import obtain_auth_token
from rest_framework.routers import DefaultRouter

from selection.api.views import CollectionViewSet

app_name = "api"

router = DefaultRouter()
router.register("collections", CollectionViewSet)

urlpatterns = [
    path("auth/token/", obtain_auth_token, name="token"),
    *router.urls,
]
