"""The OpenAPI schema's error responses: what every operation may answer besides its success.

drf-spectacular documents the successes only. The API also answers, as JSON:

* 400 with the reasons (``{"field": ["message"]}``, ``{"detail": "…"}``), for any
  operation that takes a body or query parameters, and for any write (a service may
  refuse it);
* 401 without credentials (token authentication asks for them), 403 when the role or
  the collection rights do not allow it;
* 404 for an object that does not exist or that the user may not see, and for a page
  of a list past its end.
"""

ERROR_SCHEMA = {
    "type": "object",
    "description": "The reasons: ``detail``, or the messages of each field refused.",
    "properties": {"detail": {"type": "string"}},
    "additionalProperties": True,
}
ERRORS = {
    "400": "The request was refused; the body says why, at the fields concerned.",
    "401": "No credentials were given.",
    "403": "The role, or the rights on the collection, do not allow it.",
    "404": "No such object, or none the user may see.",
}


def _response(description: str) -> dict:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


def document_errors(result, generator, request, public):
    """drf-spectacular postprocessing hook: add the error responses each operation may give."""
    result.setdefault("components", {}).setdefault("schemas", {})["Error"] = ERROR_SCHEMA
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
            for status in sorted(wanted):
                responses.setdefault(status, _response(ERRORS[status]))
    return result
