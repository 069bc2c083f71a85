from celery import shared_task

from . import services


@shared_task(autoretry_for=(OSError,), retry_backoff=True, retry_jitter=True, max_retries=8)
def invitation_email_send(invitation_id: str) -> bool:
    return services.invitation_email_send(invitation_id=invitation_id)
