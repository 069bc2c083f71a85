from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="SentMail",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("key", models.CharField(max_length=200)),
                ("recipient", models.EmailField(max_length=254)),
                ("subject", models.CharField(blank=True, max_length=300)),
                ("sent_at", models.DateTimeField()),
            ],
            options={
                "indexes": [models.Index(fields=["sent_at"], name="sent_mail_sent_at")],
                "constraints": [
                    models.UniqueConstraint(fields=("key", "recipient"), name="sent_mail_once")
                ],
            },
        ),
    ]
