"""Instant queries to a Prometheus server (DCGM GPU metrics). A monitoring outage answers None
(unknown), never a number or an error: a decision must not act on what it cannot see."""

import json
import logging
import math

import urllib3

logger = logging.getLogger(__name__)


class PrometheusClient:
    def __init__(self, *, url: str, timeout: tuple[float, float] = (5.0, 30.0)) -> None:
        self.url = url.rstrip("/")
        self.timeout = urllib3.Timeout(connect=timeout[0], read=timeout[1])
        self.http = urllib3.PoolManager()

    def samples(self, query: str) -> list[tuple[dict[str, str], float]] | None:
        """Every sample of an instant query as (labels, value), NaN left out; None when the
        query failed (unknown, not empty)."""
        try:
            response = self.http.request(
                "GET",
                f"{self.url}/api/v1/query",
                fields={"query": query},
                timeout=self.timeout,
                retries=False,
            )
            if response.status != 200:
                raise ValueError(f"HTTP {response.status}")
            result = json.loads(response.data)["data"]["result"]
            found = [(sample["metric"], float(sample["value"][1])) for sample in result]
        except (urllib3.exceptions.HTTPError, ValueError, KeyError, TypeError) as error:
            logger.warning("Prometheus query %s failed: %s", query, error)
            return None
        return [(labels, value) for labels, value in found if not math.isnan(value)]
