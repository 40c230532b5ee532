"""No models of its own: roles are auth groups (webarchive.permissions).

The module exists so that Django sends this app ``post_migrate``, on which
the role groups' permissions are synced (webarchive.apps).
"""
