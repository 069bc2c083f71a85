"""What each caller gets from an endpoint only owners and admins may write to."""

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
