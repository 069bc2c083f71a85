import pytest

# Who may submit work to acme/ai-dev (one workload or a batch), and what everyone else gets.
SUBMITTING = [
    ("owner", 201),
    ("admin", 201),
    ("member", 201),
    ("viewer", 403),
    ("foreign", 404),
    ("outsider", 404),
    ("anonymous", 401),
]


@pytest.fixture
def ready(quotas, actors, ai_dev):
    return actors
