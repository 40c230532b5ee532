"""Template context shared by every page: the navigation the user's roles allow."""

from webarchive.navigation import menu_for
from webarchive.permissions import Role, user_roles


def navigation(request):
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_areas": [], "user_roles": []}
    roles = user_roles(user)
    return {
        "nav_areas": menu_for(user),
        "user_roles": [role for role in Role if role in roles],
    }
