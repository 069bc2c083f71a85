"""Request bodies: JSON only, no deeper than a request can mean.

The size is Django's DATA_UPLOAD_MAX_MEMORY_SIZE (a larger body is a 413, see errors.py).
"""

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

# No request body of the API nests deeper than 2 (a workload's env); 32 leaves room.
MAX_DEPTH = 32


def _depth(data) -> int:
    """How deeply lists and objects nest in `data` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        value, depth = stack.pop()
        children = value.values() if isinstance(value, dict) else value
        if isinstance(value, dict | list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in children)
    return deepest


class JsonParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        too_deep = f"JSON parse error - nested deeper than {MAX_DEPTH} levels."
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as error:
            raise ParseError(too_deep) from error
        if _depth(data) > MAX_DEPTH:
            raise ParseError(too_deep)
        return data
