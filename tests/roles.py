"""What each caller gets from an endpoint: one only owners and admins may write to, one only
they may read (money: invoices, budgets, credits), and one every member may read."""

# The actors fixture's names (None's client is anonymous) and their status.
MANAGING = [
    ("owner", 201),
    ("admin", 201),
    ("member", 403),
    ("viewer", 403),
    ("foreign", 404),
    ("outsider", 404),
    ("anonymous", 401),
]

READING = [
    ("owner", 200),
    ("admin", 200),
    ("member", 200),
    ("viewer", 200),
    ("foreign", 404),
    ("outsider", 404),
    ("anonymous", 401),
]

MANAGERS_READ = [
    ("owner", 200),
    ("admin", 200),
    ("member", 403),
    ("viewer", 403),
    ("foreign", 404),
    ("outsider", 404),
    ("anonymous", 401),
]

# The same for a console page: an anonymous visitor is sent to sign in.
CONSOLE_MANAGERS_READ = [
    (caller, 302 if caller == "anonymous" else status) for caller, status in MANAGERS_READ
]
