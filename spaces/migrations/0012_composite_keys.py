"""Keys within a space (SPEC §11, ``common.space_keys``): primary keys on (space_id, id), and
foreign keys between this app"s tables and others of a space on (space_id, x_id)."""
from django.db import migrations

from common.space_keys import composite_foreign_keys, composite_primary_keys


class Migration(migrations.Migration):
    # After every app has dropped its one-column foreign keys (so no primary key is in use).
    dependencies = [
        ("spaces", "0011_space_keys"),
        ("events", "0003_space_keys"),
        ("allocation", "0013_space_keys"),
        ("tasks", "0020_space_keys"),
        ("exports", "0002_space_keys"),
        ("webhooks", "0002_space_keys"),
    ]

    operations = [
        composite_primary_keys(
            "spaces_member",
            "spaces_apikey",
            "spaces_joinlink",
            "spaces_joinredemption",
            "spaces_charteritem",
            "spaces_catalogchange",
            "spaces_post",
        ),
        composite_foreign_keys(
            ("spaces_apikey", "member_id", "spaces_member"),
            ("spaces_joinlink", "created_by_id", "spaces_member"),
            ("spaces_joinredemption", "link_id", "spaces_joinlink"),
            ("spaces_joinredemption", "member_id", "spaces_member"),
            ("spaces_post", "author_id", "spaces_member"),
            ("spaces_post", "withheld_by_id", "spaces_member"),
        ),
    ]
