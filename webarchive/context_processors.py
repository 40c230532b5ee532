"""Template context shared by every page: the navigation the user's roles allow."""

from django.conf import settings

from webarchive.navigation import menu_for
from webarchive.permissions import Role, user_roles


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        # Anonymous visitors are shown the reading room when the site lets them read what is open.
        return {"nav_areas": [], "user_roles": [], "visitors_read": settings.ACCESS_ANONYMOUS}
    roles = user_roles(user)
    return {
        "nav_areas": menu_for(user),
        "user_roles": [role for role in Role if role in roles],
    }
