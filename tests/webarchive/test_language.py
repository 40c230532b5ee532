"""The interface language: the browser's by default, a switch on every page, remembered per person."""

import re

import pytest
from django.urls import reverse

from tests.factories import PASSWORD, UserFactory
from webarchive.models import UserPreference
from webarchive.permissions import Role

pytestmark = pytest.mark.django_db


def page_language(response) -> str:
    return re.search(r'<html lang="([^"]+)">', response.content.decode()).group(1)


def test_the_browsers_language_is_the_default(client):
    assert page_language(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9")) == "fr"
    assert page_language(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="de-DE")) == "en"


def test_a_person_s_choice_is_remembered_in_every_session_and_browser(client):
    user = UserFactory(username="camille", roles=[Role.LIBRARIAN])
    client.force_login(user)
    home = client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="fr")
    assert page_language(home) == "fr"
    assert 'name="language" value="en"' in home.content.decode()  # the switch offers the other one
    response = client.post(reverse("language"), {"language": "en", "next": "/selection/"})
    assert response.status_code == 302 and response["Location"] == "/selection/"
    assert UserPreference.objects.get(user=user).language == "en"
    assert page_language(client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="fr")) == "en"
    # Another browser, French by default: after logging in, the person's choice.
    other = client.__class__()
    other.post(reverse("login"), {"username": "camille", "password": PASSWORD})
    assert page_language(other.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="fr")) == "en"
    # An empty choice goes back to the browser's language.
    client.post(reverse("language"), {"language": ""})
    assert UserPreference.objects.get(user=user).language == ""
    assert page_language(client.get(reverse("home"), HTTP_ACCEPT_LANGUAGE="fr")) == "fr"


def test_a_visitor_s_choice_is_kept_in_a_cookie(client):
    response = client.post(reverse("language"), {"language": "fr", "next": reverse("login")})
    assert response["Location"] == reverse("login")
    assert page_language(client.get(reverse("login"), HTTP_ACCEPT_LANGUAGE="en")) == "fr"
    assert not UserPreference.objects.exists()


def test_a_bad_choice_is_refused_and_changes_nothing(client):
    user = UserFactory(roles=[Role.LIBRARIAN])
    client.force_login(user)
    client.post(reverse("language"), {"language": "fr"})
    response = client.post(reverse("language"), {"language": "xx-evil"})
    assert response.status_code == 400
    # Said in the person's language (French, chosen just before).
    assert response.content.decode() == "« xx-evil » n'est pas une langue de ce site."
    assert UserPreference.objects.get(user=user).language == "fr"
    outside = client.post(reverse("language"), {"language": "en", "next": "https://evil.example/"})
    assert outside["Location"] == reverse("home")  # never sent off the site
