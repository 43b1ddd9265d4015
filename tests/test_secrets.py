"""One rule for what a secret is (``compiler.core.secrets``): the compiler refuses a literal under
exactly the keys every output masks, and a reference has one grammar everywhere.

The copies this replaced disagreed: the compiler refused a literal ``auth`` that the plan
printed, the plan masked ``cache_key`` that the compiler let through, the plan showed
``file:relative`` as a reference the compiler refused, and the registry let through a
reference (``env:``-anything) that the resolver then could not read.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.compile import compile_site, located
from compiler.core.problems import Problems
from compiler.core.secrets import (
    SENSITIVE,
    Redactor,
    SecretError,
    is_reference,
    is_secret_key,
    resolve,
)
from reconciler.protocol import ErrorCode, ProviderError, resolve_secret
from reconciler.providers.registry import open_provider

SECRET_KEYS = [
    "auth", "token", "password", "secret", "api_key", "credentials", "credential",
    "private_key", "passwd", "pass", "db_pass", "passphrase", "apiKey", "APIKey", "X-Api-Key",
    "authToken", "oauth_token", "Authorization", "client_secret", "SECRET_KEY", "access_key",
    "signing_key", "encryptionKey", "privatekey", "tokens", "api_token",
]
# A bare ``key`` is a lookup or sort key far more often than a credential: not a secret.
PLAIN_KEYS = [
    "key", "keys", "cache_key", "sort_key", "public_key", "key_id", "primary_key", "author",
    "authority", "bypass", "compass", "passive", "monkey", "keyboard", "name", "path",
]
LITERAL = "Lit-3r4l-v4lue-xyz"


@pytest.mark.parametrize("name", SECRET_KEYS)
def test_a_secret_key(name: str) -> None:
    assert is_secret_key(name)


@pytest.mark.parametrize("name", PLAIN_KEYS)
def test_not_a_secret_key(name: str) -> None:
    assert not is_secret_key(name)


def test_a_dotted_path_is_secret_when_any_key_on_it_is() -> None:
    assert is_secret_key("spec.auth.user") and is_secret_key("params.mirrors[0].token")
    assert not is_secret_key("spec.cache_key.sort_key")


def _compile_problems(tmp_path: Path, params: dict[str, Any],
                      credentials: dict[str, Any] | None = None) -> list[tuple[str, str]]:
    site = tmp_path / "site"
    site.mkdir(exist_ok=True)
    (site / "site.yaml").write_text("version: 1\nsite: {name: t}\n")
    (site / "hosts.yaml").write_text("version: 1\nhost_groups: [{name: g, hosts: 'n[1-2]'}]\n")
    creds = f"    credentials: {json.dumps(credentials)}\n" if credentials else ""
    (site / "providers.yaml").write_text(
        "version: 1\nproviders:\n  - name: x\n    kind: exec\n    command: [p]\n"
        f"    params: {json.dumps(params)}\n{creds}"
        "proxies: [{name: p, host: n1, active: [x]}]\n")
    problems = Problems()
    _, files = compile_site(site, problems)
    return [(p.code, p.message) for p in located(problems, files)]


def _refused(tmp_path: Path, params: dict[str, Any]) -> bool:
    found = _compile_problems(tmp_path, params)
    assert all(LITERAL not in message for _, message in found)  # never echoed
    assert all(code == "XCE407" for code, _ in found), found
    return bool(found)


@pytest.mark.parametrize("name", SECRET_KEYS + PLAIN_KEYS)
def test_the_compiler_refuses_a_literal_exactly_where_outputs_mask_it(
    tmp_path: Path, name: str
) -> None:
    params = {name: LITERAL}
    masked = Redactor().value("", params) != params
    assert masked is is_secret_key(name)
    assert _refused(tmp_path, params) is masked
    assert (Redactor().value(f"spec.{name}", LITERAL) == SENSITIVE) is masked


def test_everything_under_a_secret_key_is_secret_at_compile_time_and_in_outputs(
    tmp_path: Path,
) -> None:
    params = {"auth": {"user": LITERAL, "scopes": [LITERAL]}}
    assert Redactor().value("", params) == {"auth": {"user": SENSITIVE, "scopes": [SENSITIVE]}}
    assert Redactor().value("spec.auth", params["auth"]) == Redactor().value("", params)["auth"]
    assert len(_compile_problems(tmp_path, params)) == 2


def test_a_reference_true_false_or_null_under_a_secret_key_is_shown_and_accepted(
    tmp_path: Path,
) -> None:
    params = {"token": "env:TOK", "auth": {"key_file": "file:/run/k", "api_key": "env:K"},
              "use_password": True, "password": None, "secrets": [False]}
    assert Redactor().value("", params) == params
    assert Redactor().value("spec.token", "file:/run/t") == "file:/run/t"
    assert _compile_problems(tmp_path, params) == []


@pytest.mark.parametrize("ref", ["env:NAME", "env:_a1", "file:/run/secrets/token", "file:/x"])
def test_a_reference(ref: str) -> None:
    assert is_reference(ref)


@pytest.mark.parametrize("ref", [
    "file:secrets/token", "file:./token", "file:~/token", "file:", "file:/a b", "env:",
    "env:1BAD", "env:A-B", "env:NAME\n", "env:NAME x", "ENV:NAME", "vault:x/y", "", 7, None,
])
def test_not_a_reference(ref: object) -> None:
    assert not is_reference(ref)


def test_a_relative_file_is_no_reference_anywhere(tmp_path: Path) -> None:
    """It would be read from whatever directory the reader runs in; refused everywhere."""
    ref = "file:secrets/token"
    found = _compile_problems(tmp_path, {}, {"api_token": ref})
    assert [code for code, _ in found] == ["XCE407"]
    binding = {"kind": "exec", "command": ["true"], "secrets": {"token": ref}}
    with pytest.raises(ProviderError, match="must be a reference") as err:
        open_provider("x", binding, tmp_path)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    with pytest.raises(ProviderError) as err:
        resolve_secret(ref)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT
    assert Redactor().value("", {"token": ref}) == {"token": SENSITIVE}


def test_resolve_reads_env_and_files_and_names_only_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XCE_T_SECRET", "hunter2")
    secret = tmp_path / "tok"
    secret.write_text("  s3cr3t-file\n")
    assert resolve("env:XCE_T_SECRET") == "hunter2"
    assert resolve(f"file:{secret}") == "s3cr3t-file"
    with pytest.raises(SecretError, match="env:XCE_T_UNSET is not set") as unset:
        resolve("env:XCE_T_UNSET")
    assert not unset.value.not_a_reference
    with pytest.raises(ProviderError) as missing:
        resolve_secret(f"file:{tmp_path}/absent")
    assert missing.value.code is ErrorCode.FAILED_PRECONDITION
    assert f"file:{tmp_path}/absent" in missing.value.message
    with pytest.raises(SecretError) as literal:
        resolve("hunter2")
    assert literal.value.not_a_reference and "hunter2" not in literal.value.message


def test_a_secret_file_that_is_not_text_is_an_error_not_a_crash(tmp_path: Path) -> None:
    binary = tmp_path / "key.der"
    binary.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ProviderError) as err:
        resolve_secret(f"file:{binary}")
    assert err.value.code is ErrorCode.FAILED_PRECONDITION and "not UTF-8" in err.value.message
    assert Redactor.of([f"file:{binary}"]).values == ()  # stderr scrubbing goes on


def test_free_text_is_scrubbed_of_resolved_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XCE_T_SECRET", "hunter2")
    redactor = Redactor.of(["env:XCE_T_SECRET"])
    assert redactor.text("login hunter2 refused (hunter2)") == (
        f"login {SENSITIVE} refused ({SENSITIVE})")
    assert redactor.text("nothing here") == "nothing here"
