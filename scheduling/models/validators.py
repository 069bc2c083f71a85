"""What the scheduling models accept: GPU class names, MIG profiles, OCI image references
and a workload's environment."""

import re

from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.utils.deconstruct import deconstructible

# Patterns anchor with \A and \Z: "$" would also match before a trailing newline.
gpu_class_name_validator = RegexValidator(
    r"\A[A-Za-z0-9][A-Za-z0-9.-]{0,39}\Z",
    "Letters, digits, dots and hyphens, e.g. H100-80GB.",
)
mig_profile_validator = RegexValidator(
    r"\Amig-[1-7]g\.[0-9]+gb\Z", "A MIG profile, e.g. mig-1g.10gb."
)

# An OCI image reference, [registry[:port]/]path[:tag][@digest], by the grammar of the
# distribution project's reference package (github.com/distribution/reference, regexp.go);
# its name part (registry and path) has at most 255 characters.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
IMAGE_NAME_MAX = 255
IMAGE_MAX = 500


@deconstructible(path="scheduling.models.ImageReferenceValidator")
class ImageReferenceValidator(RegexValidator):
    regex = rf"\A({_NAME})(?::{_TAG})?(?:@{_DIGEST})?\Z"
    message = "Not an OCI image reference, e.g. nvcr.io/nvidia/pytorch:25.01-py3."
    code = "invalid_image"

    def __call__(self, value):
        super().__call__(value)
        if len(self.regex.match(str(value)).group(1)) > IMAGE_NAME_MAX:
            raise ValidationError(
                f"The image name (registry and path) exceeds {IMAGE_NAME_MAX} characters.",
                code=self.code,
            )


image_reference_validator = ImageReferenceValidator()

# A workload's environment: C identifiers for names, and a bound on how much it carries.
ENV_NAME_PATTERN = r"\A[A-Za-z_][A-Za-z0-9_]*\Z"
ENV_NAME_MAX = 256
ENV_VALUE_MAX = 4096
ENV_MAX_VARIABLES = 128
ENV_MAX_BYTES = 64 * 1024


def env_validator(env) -> None:
    """Names that are C identifiers; at most ENV_MAX_VARIABLES variables, values of at most
    ENV_VALUE_MAX characters, ENV_MAX_BYTES in all (names and values in UTF-8)."""
    if not isinstance(env, dict) or not all(isinstance(value, str) for value in env.values()):
        raise ValidationError("A mapping of variable names to strings.", code="invalid_env")
    bad = [n for n in env if len(n) > ENV_NAME_MAX or not re.match(ENV_NAME_PATTERN, n)][:3]
    if bad:
        shown = ", ".join(repr(name[:40]) for name in bad)
        raise ValidationError(
            f"Not environment variable names (letters, digits and _, not a digit first, at most"
            f" {ENV_NAME_MAX}): {shown}.",
            code="invalid_env",
        )
    long = [name for name, value in env.items() if len(value) > ENV_VALUE_MAX][:3]
    if long:
        raise ValidationError(
            f"Values longer than {ENV_VALUE_MAX} characters: {', '.join(long)}.",
            code="invalid_env",
        )
    if len(env) > ENV_MAX_VARIABLES:
        raise ValidationError(
            f"{len(env)} variables; at most {ENV_MAX_VARIABLES}.", code="invalid_env"
        )
    size = sum(len(name.encode()) + len(value.encode()) for name, value in env.items())
    if size > ENV_MAX_BYTES:
        raise ValidationError(
            f"{size} bytes of names and values; at most {ENV_MAX_BYTES}.", code="invalid_env"
        )
