from django.contrib.auth import get_user_model
from rest_framework import serializers

from selection.models import Collection


class CollectionSerializer(serializers.ModelSerializer):
    members = serializers.SlugRelatedField(
        slug_field="username", many=True, required=False, queryset=get_user_model().objects.all()
    )

    class Meta:
        model = Collection
        fields = [
            "id",
            "url",
            "name",
            "description",
            "kind",
            "is_active",
            "members",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]
        extra_kwargs = {"url": {"view_name": "api:collection-detail"}}
