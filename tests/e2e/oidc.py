"""A certified OpenID Connect provider for the single sign-on tests: panva's node-oidc-provider
(oidc-provider/server.js, pinned by its package-lock.json), run by Node on a free loopback port
with one client, the portal, and the identities the tests sign in as."""

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

PROVIDER_DIR = Path(__file__).resolve().parent / "oidc-provider"
PROVIDER_ID = "corp"
CLIENT_ID = "portal"
# A throwaway secret of a provider that lives for one test session on the loopback interface.
CLIENT_SECRET = "test-only-client-secret"
# Who can sign in at the provider: the login typed on its form is the identity's subject.
IDENTITIES = [
    {"login": "ada", "email": "ada@corp.example", "email_verified": True, "name": "Ada L"},
    {"login": "grace", "email": "grace@corp.example", "email_verified": True, "name": "Grace H"},
    {"login": "linus", "email": "linus@corp.example", "email_verified": True, "name": "Linus T"},
    {"login": "eve", "email": "eve@corp.example", "email_verified": False, "name": "Eve U"},
]


@dataclass(frozen=True)
class OidcProvider:
    issuer: str

    def portal_apps(self) -> dict:
        """SOCIALACCOUNT_PROVIDERS as the portal's settings make it of PORTAL_OIDC_PROVIDERS
        naming this provider."""
        from portal.settings.base import oidc_apps

        given = {"id": PROVIDER_ID, "name": "Corp SSO", "server_url": self.issuer}
        given |= {"client_id": CLIENT_ID, "secret": CLIENT_SECRET}
        apps = oidc_apps({"PORTAL_OIDC_PROVIDERS": json.dumps([given])})
        return {"openid_connect": {"APPS": apps}}


def node_missing() -> str | None:
    """Why the provider cannot run here, or None."""
    for tool in ("node", "npm"):
        if not shutil.which(tool):
            return f"no {tool}: the SSO tests run their OpenID Connect provider on Node.js"
    return None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def provider_started(portal_url: str) -> tuple[subprocess.Popen, OidcProvider]:
    """The provider's process, answering its discovery document, for the portal at
    ``portal_url``; `npm ci` first when its node_modules is missing."""
    if not (PROVIDER_DIR / "node_modules").is_dir():
        subprocess.run(
            ["npm", "ci", "--no-audit", "--no-fund"], cwd=PROVIDER_DIR, check=True, timeout=300
        )
    port = free_port()
    callback = f"{portal_url}/accounts/oidc/{PROVIDER_ID}/login/callback/"
    env = os.environ | {
        "OIDC_PORT": str(port),
        "OIDC_CLIENTS": json.dumps(
            [{"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": [callback]}]
        ),
        "OIDC_USERS": json.dumps(IDENTITIES),
    }
    process = subprocess.Popen(
        ["node", "server.js"],
        cwd=PROVIDER_DIR,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    provider = OidcProvider(issuer=f"http://127.0.0.1:{port}")
    for _ in range(200):
        try:
            with urllib.request.urlopen(
                f"{provider.issuer}/.well-known/openid-configuration", timeout=1
            ) as answer:
                if json.load(answer)["issuer"] == provider.issuer:
                    return process, provider
        except OSError:
            if process.poll() is not None:
                raise RuntimeError(f"the OIDC provider exited ({process.returncode})") from None
            time.sleep(0.1)
    process.kill()
    raise RuntimeError("the OIDC provider did not answer its discovery document in 20 s")


def signed_in_through_provider(page, login: str, *, from_login_page: bool = False):
    """``page`` after signing in to the portal through the provider as ``login``, from the
    portal's sign-in page (opened unless ``page`` is on it)."""
    if not from_login_page:
        page.goto("/accounts/login/")
    page.get_by_role("link", name="Corp SSO").click()
    page.get_by_role("button", name="Continue").click()
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any")
    page.get_by_role("button", name="Sign-in").click()
    return page
