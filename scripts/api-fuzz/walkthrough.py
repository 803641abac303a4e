"""The README walkthrough (catalogs, settings, the 418 without credentials, a task,
a table with a column, a record and a search) through a client generated from
/openapi.json by openapi-python-client, an independent generator: if the document
is wrong, the generated code fails here.

Usage: walkthrough.py BASE_URL TOKEN   (the client package `sandbox_client` on PYTHONPATH)
"""

import sys

from sandbox_client import AuthenticatedClient, Client
from sandbox_client.api.custom_tables import (
    create_column_company,
    create_record_company,
    create_table_company,
    search_records_company,
)
from sandbox_client.api.general import profiles, public_key, regions
from sandbox_client.api.settings import get_settings, put_settings
from sandbox_client.api.tasks import create_task, get_task
from sandbox_client.models import (
    ColumnCreate,
    RecordSearch,
    RecordWrite,
    SandboxCompanySettingsUpdate,
    SandboxTaskCreateRequest,
    TableCreate,
)


def expect(response, status):
    assert response.status_code == status, (
        f"{response.status_code} (expected {status}): {response.content[:300]!r}"
    )
    return response.parsed


def main(base_url: str, token: str) -> None:
    public = Client(base_url=base_url, raise_on_unexpected_status=False)
    boss = AuthenticatedClient(base_url=base_url, token=token, raise_on_unexpected_status=False)

    # Public catalogs and the transit key need no login.
    assert expect(regions.sync_detailed(client=public), 200).items
    assert expect(profiles.sync_detailed(client=public), 200).items
    assert expect(public_key.sync_detailed(client=public), 200).public_key_pem

    # Company settings: read, then change under the optimistic lock.
    current = expect(get_settings.sync_detailed(client=boss), 200)
    update = SandboxCompanySettingsUpdate(
        run_content_retention_days=60, policy_version=current.policy_version
    )
    changed = expect(put_settings.sync_detailed(client=boss, body=update), 200)
    assert changed.run_content_retention_days == 60

    # No credentials answer 418.
    assert get_settings.sync_detailed(client=public).status_code == 418

    # A company task.
    body = SandboxTaskCreateRequest.from_dict({"name": "echo", "owner_scope": "company"})
    task = expect(create_task.sync_detailed(client=boss, body=body), 200)
    assert expect(get_task.sync_detailed(task.id, client=boss), 200).name == "echo"

    # A company table with a column, a record and a search that finds it.
    table = expect(
        create_table_company.sync_detailed(client=boss, body=TableCreate(name="Leads")), 201
    )
    column = ColumnCreate.from_dict({"name": "Company", "type": "string"})
    expect(create_column_company.sync_detailed(table.id, client=boss, body=column), 200)
    record = RecordWrite.from_dict({"data": {"Company": "Acme"}})
    expect(create_record_company.sync_detailed(table.id, client=boss, body=record), 201)
    found = expect(
        search_records_company.sync_detailed(
            table.id, client=boss, body=RecordSearch(q="Acme")
        ),
        200,
    )
    assert found.total == 1, found
    print("walkthrough through the generated client: ok")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
