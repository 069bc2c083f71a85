"""What the browser tests share besides fixtures: signing in, and where screenshots go."""

from pathlib import Path

# Screenshots of the pages the tests open, to look at (never compared).
ARTIFACTS = Path(__file__).resolve().parents[2] / "var" / "test-artifacts"


def signed_in(page, email: str, password: str):
    """``page`` after signing in as ``email`` on the console's sign-in form."""
    page.goto("/accounts/login/")
    page.fill("input[name=login]", email)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    return page
