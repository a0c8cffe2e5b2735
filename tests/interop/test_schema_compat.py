"""The schema registry with the official ``pulsar-client``: producers and consumers with
``pulsar.schema`` schemas meet Pulsar's compatibility strategies (broker default FULL, namespace
``schemaCompatibilityStrategy``), ``isAllowAutoUpdateSchema`` and ``schemaValidationEnforced``;
refusals surface as ``pulsar.IncompatibleSchema``. The admin ``/admin/v2/schemas`` endpoints and
``pulsar-rs admin schemas`` / ``namespaces ...-schema-...`` commands read and change the same
registry."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from typing import Any

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, JsonSchema, Record, String, StringSchema

from pulsar_rs import Admin, AdminError

_ns_counter = itertools.count()


class User(Record):
    name = String()
    age = Integer()


class BadUser(Record):
    """``age`` changes type: no strategy but ALWAYS_COMPATIBLE accepts it."""

    name = String()
    age = String()


def avro(fields: list[tuple[str, str, Any]]) -> AvroSchema:
    """An Avro record schema from ``(name, type, default)``; ``...`` as default means none."""
    defs = []
    for name, typ, default in fields:
        f: dict[str, Any] = {"name": name, "type": typ}
        if default is not ...:
            f["default"] = default
        defs.append(f)
    return AvroSchema(None, schema_definition={"type": "record", "name": "R", "fields": defs})


#: Three versions of one record for the strategy tests: V2 adds ``b`` with a default, V3 makes
#: it required. V3 reads V2's data but not V1's (no ``b``, no default); V1 reads all of them.
V1 = [("a", "int", ...)]
V2 = [("a", "int", ...), ("b", "int", 0)]
V3 = [("a", "int", ...), ("b", "int", ...)]


@pytest.fixture
def admin(pulsar_broker) -> Admin:
    return Admin(pulsar_broker.admin_url)


@pytest.fixture
def namespace(admin) -> str:
    """A fresh namespace, so policy changes stay in the test."""
    ns = f"public/schema-{next(_ns_counter)}"
    admin.namespaces.create(ns)
    return ns


def producer(client, topic: str, schema) -> pulsar.Producer:
    return client.create_producer(topic, schema=schema, batching_enabled=False)


def refused(fn, *args, **kwargs) -> None:
    with pytest.raises(pulsar.IncompatibleSchema):
        fn(*args, **kwargs)


def test_default_full_refuses_an_incompatible_producer(client, admin, topic):
    p = producer(client, topic, AvroSchema(User))
    p.send(User(name="ann", age=3))
    refused(producer, client, topic, AvroSchema(BadUser))
    refused(producer, client, topic, JsonSchema(BadUser))  # another type is no evolution either
    # Nothing was registered by the refusals; the topic keeps serving its schema.
    assert [v["version"] for v in admin.schemas.get_all_versions(topic)] == [0]
    producer(client, topic, AvroSchema(User)).send(User(name="bob", age=4))


def test_compatible_evolution_gets_a_new_version(client, admin, topic):
    p1 = producer(client, topic, avro(V1))
    p1.send({"a": 1})
    p2 = producer(client, topic, avro(V2))  # FULL: a new field with a default
    p2.send({"a": 2, "b": 7})
    assert [v["version"] for v in admin.schemas.get_all_versions(topic)] == [0, 1]
    latest = admin.schemas.get(topic)
    assert latest["version"] == 1 and latest["type"] == "AVRO"
    assert [f["name"] for f in json.loads(latest["data"])["fields"]] == ["a", "b"]
    # The same definition again is the same version, not a third one.
    producer(client, topic, avro(V2))
    assert len(admin.schemas.get_all_versions(topic)) == 2
    # A V1 consumer reads both versions (the client resolves each message's writer schema).
    c = client.subscribe(topic, "s", schema=avro(V1), initial_position=pulsar.InitialPosition.Earliest)
    assert [c.receive(5000).value()["a"] for _ in range(2)] == [1, 2]


def test_consumer_with_an_incompatible_schema_is_refused(client, topic):
    producer(client, topic, JsonSchema(User)).send(User(name="ann", age=3))
    refused(client.subscribe, topic, "s", schema=JsonSchema(BadUser))
    refused(client.subscribe, topic, "s", schema=AvroSchema(BadUser))
    refused(client.subscribe, topic, "s", schema=StringSchema())
    # The refusals left no consumer behind: the same subscription works with the right schema.
    c = client.subscribe(topic, "s", schema=JsonSchema(User), initial_position=pulsar.InitialPosition.Earliest)
    assert c.receive(5000).value().name == "ann"
    # Without a schema (bytes) a consumer is always accepted, as Pulsar's.
    client.subscribe(topic, "raw")


def test_first_consumer_schema_on_an_idle_topic_is_registered(client, admin, topic):
    client.subscribe(topic, "s", schema=AvroSchema(User))
    assert admin.schemas.get(topic)["version"] == 0
    refused(producer, client, topic, AvroSchema(BadUser))


def test_namespace_strategy_always_compatible_and_always_incompatible(client, admin, namespace):
    topic = f"persistent://{namespace}/t"
    assert admin.namespaces.get_schema_compatibility_strategy(namespace) == "UNDEFINED"
    admin.namespaces.set_schema_compatibility_strategy(namespace, "ALWAYS_COMPATIBLE")
    assert admin.namespaces.get_schema_compatibility_strategy(namespace) == "ALWAYS_COMPATIBLE"
    producer(client, topic, AvroSchema(User))
    producer(client, topic, AvroSchema(BadUser))
    assert len(admin.schemas.get_all_versions(topic)) == 2
    admin.namespaces.set_schema_compatibility_strategy(namespace, "ALWAYS_INCOMPATIBLE")
    refused(producer, client, topic, avro(V1))
    producer(client, topic, AvroSchema(User))  # a version in force is still served


@pytest.mark.parametrize(
    "strategy, accepted",
    [
        # V1 → V3 directly: BACKWARD-type strategies refuse (V3's b has no default for V1's data).
        ("BACKWARD", False),
        ("FORWARD", True),
        ("FULL", False),
    ],
)
def test_backward_and_forward(client, admin, namespace, strategy, accepted):
    topic = f"persistent://{namespace}/t"
    admin.namespaces.set_schema_compatibility_strategy(namespace, strategy)
    producer(client, topic, avro(V1))
    if accepted:
        producer(client, topic, avro(V3))
    else:
        refused(producer, client, topic, avro(V3))
    # Dropping a field without a default: old readers miss it, new ones ignore it.
    topic2 = topic + "-drop"
    producer(client, topic2, avro(V3))
    if strategy == "BACKWARD":
        producer(client, topic2, avro(V1))
    else:
        refused(producer, client, topic2, avro(V1))


@pytest.mark.parametrize("transitive", [False, True])
def test_transitive_strategies_check_every_version(client, admin, namespace, transitive):
    topic = f"persistent://{namespace}/t"
    admin.namespaces.set_schema_compatibility_strategy(namespace, "BACKWARD_TRANSITIVE" if transitive else "BACKWARD")
    producer(client, topic, avro(V1))
    producer(client, topic, avro(V2))
    # V3 reads V2's data, not V1's: only the transitive strategy looks back that far.
    if transitive:
        refused(producer, client, topic, avro(V3))
    else:
        producer(client, topic, avro(V3))


def test_broker_default_strategy_is_a_setting(pulsar_broker_factory, client_factory, topic):
    broker = pulsar_broker_factory(schemaCompatibilityStrategy="ALWAYS_COMPATIBLE")
    client = client_factory(broker.service_url)
    producer(client, topic, AvroSchema(User))
    producer(client, topic, AvroSchema(BadUser))
    with pytest.raises(ValueError, match="schemaCompatibilityStrategy"):
        pulsar_broker_factory(schemaCompatibilityStrategy="SOMETIMES")


def test_auto_update_disabled_refuses_new_schemas_from_producers(client, admin, namespace):
    topic = f"persistent://{namespace}/t"
    # Unset, the broker's isAllowAutoUpdateSchemaEnabled (true), as Pulsar answers it.
    assert admin.namespaces.get_is_allow_auto_update_schema(namespace) is True
    admin.namespaces.set_is_allow_auto_update_schema(namespace, False)
    assert admin.namespaces.get_is_allow_auto_update_schema(namespace) is False
    refused(producer, client, topic, avro(V1))  # not even a first schema
    # An operator registers it; producers with exactly that schema are then accepted.
    v1 = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
    assert admin.schemas.upload(topic, "AVRO", v1) == 0
    producer(client, topic, avro(V1)).send({"a": 1})
    refused(producer, client, topic, avro(V2))  # compatible, but new
    admin.namespaces.set_is_allow_auto_update_schema(namespace, True)
    producer(client, topic, avro(V2))
    assert len(admin.schemas.get_all_versions(topic)) == 2


def test_validation_enforced_refuses_producers_without_a_schema(client, admin, namespace):
    topic = f"persistent://{namespace}/t"
    bare = f"persistent://{namespace}/bare"
    producer(client, topic, AvroSchema(User))
    client.create_producer(topic).close()  # not enforced: bytes producers are let in
    assert admin.namespaces.get_schema_validation_enforce(namespace) is False
    admin.namespaces.set_schema_validation_enforce(namespace, True)
    assert admin.namespaces.get_schema_validation_enforce(namespace) is True
    refused(client.create_producer, topic)
    client.create_producer(bare).send(b"x")  # a topic without a schema takes anything


def test_admin_schema_endpoints(client, admin, topic):
    v1 = json.dumps(User.schema())
    assert admin.schemas.upload(topic, "AVRO", v1, {"owner": "ops"}) == 0
    got = admin.schemas.get(topic)
    assert got["version"] == 0 and got["type"] == "AVRO" and got["properties"] == {"owner": "ops"}
    assert json.loads(got["data"]) == User.schema()
    assert admin.schemas.get(topic, 0)["data"] == got["data"]
    assert admin.schemas.version_of(topic, "AVRO", v1) == 0
    assert admin.schemas.compatibility(topic, "AVRO", v1) == {
        "compatibility": True,
        "schemaCompatibilityStrategy": "FULL",
    }
    bad = json.dumps(BadUser.schema())
    with pytest.raises(AdminError) as e:
        admin.schemas.compatibility(topic, "AVRO", bad)
    assert e.value.status == 409
    assert e.value.reason.startswith(
        "Error during schema compatibility check with strategy FULL: "
        "org.apache.avro.SchemaValidationException: Unable to read schema"
    ), e.value.reason
    with pytest.raises(AdminError) as e:
        admin.schemas.upload(topic, "AVRO", "{not json")
    assert (e.value.status, e.value.reason) == (422, "Invalid schema definition data for AVRO schema")
    with pytest.raises(AdminError) as e:
        admin.schemas.upload(topic, "AVRO", bad)
    assert e.value.status == 409
    with pytest.raises(AdminError) as e:
        admin.schemas.get(topic, 5)
    assert e.value.status == 404
    # The producer's schema is the uploaded one: version 0, no new version.
    producer(client, topic, AvroSchema(User)).send(User(name="ann", age=1))
    assert len(admin.schemas.get_all_versions(topic)) == 1
    # Deleting starts a fresh history: the incompatible schema is now accepted.
    admin.schemas.delete(topic)
    with pytest.raises(AdminError) as e:
        admin.schemas.get(topic)
    assert e.value.status == 404
    assert admin.schemas.upload(topic, "AVRO", bad) == 2  # version 1 is the deletion marker
    assert [v["version"] for v in admin.schemas.get_all_versions(topic)] == [2]


def test_cli_schema_commands(pulsar_broker, client, topic, namespace, tmp_path):
    def cli(*args: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = [sys.executable, "-m", "pulsar_rs.cli", "admin", "--admin-url", pulsar_broker.admin_url, *args]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        assert (p.returncode == 0) == ok, (args, p.stdout, p.stderr)
        return p

    payload = tmp_path / "user.json"
    payload.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(User.schema()), "properties": {}}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"type": "AVRO", "schema": json.dumps(BadUser.schema()), "properties": {}}))
    cli("schemas", "upload", topic, "-f", str(payload))
    assert json.loads(cli("--json", "schemas", "get", topic).stdout)["version"] == 0
    assert json.loads(cli("--json", "schemas", "get", topic, "-v", "0").stdout)["type"] == "AVRO"
    assert len(json.loads(cli("--json", "schemas", "get", topic, "--all-version").stdout)) == 1
    verdict = json.loads(cli("--json", "schemas", "compatibility", topic, "-f", str(payload)).stdout)
    assert verdict["compatibility"] is True
    # As pulsar-admin: an incompatible schema fails the command.
    p = cli("schemas", "compatibility", topic, "-f", str(bad), ok=False)
    assert p.stderr.startswith("pulsar-rs admin: 409 Error during schema compatibility check"), p.stderr
    p = cli("schemas", "upload", topic, "-f", str(bad), ok=False)
    assert p.stderr.startswith("pulsar-rs admin: 409 ")
    cli("schemas", "delete", topic)
    cli("schemas", "get", topic, ok=False)

    cli("namespaces", "set-schema-compatibility-strategy", namespace, "-c", "always_compatible")
    assert cli("namespaces", "get-schema-compatibility-strategy", namespace).stdout.strip() == "ALWAYS_COMPATIBLE"
    cli("namespaces", "set-is-allow-auto-update-schema", namespace, "--disable")
    assert cli("namespaces", "get-is-allow-auto-update-schema", namespace).stdout.strip() == "false"
    cli("namespaces", "set-schema-validation-enforce", namespace, "-e")
    assert cli("namespaces", "get-schema-validation-enforce", namespace).stdout.strip() == "true"
    cli("namespaces", "set-schema-compatibility-strategy", namespace, "-c", "SOMETIMES", ok=False)
    # The policies are in force for clients.
    refused(producer, client, f"persistent://{namespace}/t", AvroSchema(User))
