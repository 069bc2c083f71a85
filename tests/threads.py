"""Racing real transactions: each call in its own thread (and database connection)."""

import threading

from django.db import close_old_connections, connection


def run_together(*calls) -> list:
    """Start every call at the same moment, each in its own thread; their results or errors."""
    barrier = threading.Barrier(len(calls))
    outcomes: list = [None] * len(calls)

    def run(index, call):
        try:
            barrier.wait()
            outcomes[index] = call()
        except Exception as error:  # the test inspects what each call raised
            outcomes[index] = error
        finally:
            close_old_connections()
            connection.close()

    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    return outcomes
