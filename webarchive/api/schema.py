"""The OpenAPI schema's error responses: what every operation may answer besides its success.

drf-spectacular documents the successes only. The API also answers, as JSON:

* 400 with the reasons (``{"field": ["message"]}``, ``{"detail": "…"}``), for any
  operation that takes a body or query parameters, and for any write (a service may
  refuse it);
* 401 without credentials (token authentication asks for them), 403 when the role or
  the collection rights do not allow it;
* 404 for an object that does not exist or that the user may not see, and for a page
  of a list past its end;
* 409 for a change of an archival object made over a ``version`` someone has saved
  since (webarchive.versioning): any operation on one object whose body carries
  the ``version`` (PUT, PATCH, and actions such as a record's status).
"""

ERROR_SCHEMA = {
    "type": "object",
    "description": "The reasons: ``detail``, or the messages of each field refused.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}
CONFLICT_SCHEMA = {
    "type": "object",
    "description": "Someone saved the object since the version sent: nothing was written.",
    "properties": {
        "detail": {"type": "string", "description": "What happened, and who changed what."},
        "version": {"type": "integer", "description": "The version stored now."},
        "changes": {
            "type": "array",
            "description": "The changes saved since the version sent, oldest first.",
            "items": {
                "type": "object",
                "properties": {
                    "field": {"type": "string", "description": "The field's name."},
                    "label": {"type": "string", "description": "The field as people call it."},
                    "old": {"type": "string"},
                    "new": {"type": "string"},
                    "user": {"type": "string", "nullable": True, "description": "Who; null if unknown."},
                    "date": {"type": "string", "format": "date-time"},
                },
                "required": ["field", "label", "old", "new", "user", "date"],
            },
        },
    },
    "required": ["detail", "version", "changes"],
}
ERRORS = {
    "400": "The request was refused; the body says why, at the fields concerned.",
    "401": "No credentials were given.",
    "403": "The role, or the rights on the collection, do not allow it.",
    "404": "No such object, or none the user may see.",
    "409": "Someone saved the object since the version sent; the body says what they changed. "
    "Nothing was written: read the object again and make the change on its new version.",
}
SCHEMAS = {"409": "Conflict"}


def _response(status: str) -> dict:
    return {
        "description": ERRORS[status],
        "content": {
            "application/json": {"schema": {"$ref": f"#/components/schemas/{SCHEMAS.get(status, 'Error')}"}}
        },
    }


def _sends_version(operation: dict, schemas: dict) -> bool:
    """The operation's JSON body carries an object's ``version``."""
    body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
    if "$ref" in body:
        body = schemas.get(body["$ref"].rsplit("/", 1)[-1], {})
    return "version" in body.get("properties", {})


def document_errors(result, generator, request, public):
    """drf-spectacular postprocessing hook: add the error responses each operation may give."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = ERROR_SCHEMA
    schemas["Conflict"] = CONFLICT_SCHEMA
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            wanted = ["401", "403"]
            parameters = [p for p in operation.get("parameters", []) if p.get("in") == "query"]
            if method != "get" or parameters or "requestBody" in operation:
                wanted.append("400")
            if "{" in path or any(p["name"] == "page" for p in parameters):
                wanted.append("404")  # no such object, or no such page of a list
            if method != "get" and "{" in path and _sends_version(operation, schemas):
                wanted.append("409")  # a change of one object, made over the version read
            for status in sorted(wanted):
                responses.setdefault(status, _response(status))
    return result
