from django.core.management.base import BaseCommand, CommandError

from common import sharding


class Command(BaseCommand):
    help = ("Print the statements that distribute this database's schema by space on Citus (SPEC §11), "
            "in the order to run them on the coordinator after `migrate`: reference tables, then every "
            "table of a space by space_id, co-located. Refuses when the live schema breaks the rule.")

    def handle(self, *args, **options):
        found = sharding.problems()
        if found:
            raise CommandError("The schema cannot be distributed by space:\n  " + "\n  ".join(found))
        for statement in sharding.citus_statements():
            self.stdout.write(statement)
