"""The REST API: one router for every app's viewsets."""

from django.urls import path
from rest_framework.routers import DefaultRouter

from selection.api.views import CollectionViewSet, CompatibilityRuleViewSet, RecordViewSet, ThemeViewSet
from webarchive.api.views import ObtainTokenView

app_name = "api"

router = DefaultRouter()
router.register("collections", CollectionViewSet)
router.register("records", RecordViewSet)
router.register("themes", ThemeViewSet)
router.register("compatibility-rules", CompatibilityRuleViewSet)

urlpatterns = [
    path("auth/token/", ObtainTokenView.as_view(), name="token"),
    *router.urls,
]
