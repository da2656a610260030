"""Which engine release a container image runs, read from its reference: `vllm/vllm-openai:v0.11.0`,
`lmsysorg/sglang:v0.5.16-cu129`, a mirror's `registry.example.com/mirror/vllm/vllm-openai:v0.11.0`.

An engine's image naming (its repositories, how a tag spells the release, the entry point the image starts) is a
fact about the engine, kept with it: the IMAGE_* fields of its unit (compat/engines/), read here through
`naming(engine)` and `engines()`. A tag that says nothing (`latest`, `nightly`, a digest only, an image of another
project) tells no release: the caller says so and uses `--engine` when the user gave one. Nothing is guessed from a tag's look.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from compat import engines as engine_units
from compat.manifests.model import Image, Where


@dataclass(frozen=True)
class ImageNaming:
    """How one engine's published images are named."""

    repositories: tuple[str, ...]  # docker.io names without the registry ("vllm/vllm-openai"); a mirror's prefix is allowed
    tags: tuple[str, ...]  # regexes with a `version` group; the first that matches names the release
    entry: tuple[str, ...] = ()  # the ENTRYPOINT the image starts when a manifest gives only args ((): none usable)
    docs: str = ""  # where the naming is documented


DOCKER_HUB = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


def engines() -> tuple[str, ...]:
    return tuple(e.name for e in engine_units.all_engines() if e.image_repositories)


def naming(engine: str) -> ImageNaming:
    unit = engine_units.get(engine)
    return ImageNaming(unit.image_repositories, unit.image_tags, unit.image_entry, unit.image_docs)


def read_image(ref: str, where: Where, path: tuple[str | int, ...] = (), tag_path: tuple[str | int, ...] = ()) -> Image:
    """The image reference split into repository, tag and digest, with the engine and release its naming tells."""
    name, _, digest = ref.strip().partition("@")
    last = name.rsplit("/", 1)[-1]
    tag = None
    if ":" in last:
        name, _, tag = name.rpartition(":")
    repository = name
    for hub in DOCKER_HUB:
        if repository.startswith(hub):
            repository = repository[len(hub):]
    if repository.startswith("library/"):
        repository = repository[len("library/"):]
    engine = _engine_of(repository)
    version = _version(engine, tag) if engine else None
    return Image(ref, where, repository, tag or None, digest or None, engine, version, path, tag_path)


def _engine_of(repository: str) -> str | None:
    for engine in engines():
        for known in naming(engine).repositories:
            if repository == known or repository.endswith("/" + known):
                return engine
    return None


def _version(engine: str, tag: str | None) -> str | None:
    """The release a tag names, spelled as the package index does (`v0.11.0-rc1` is 0.11.0rc1)."""
    if not tag:
        return None
    for pattern in naming(engine).tags:
        found = re.search(pattern, tag)
        if found:
            try:
                return str(Version(found.group("version")))
            except InvalidVersion:
                return found.group("version")
    return None


def entry_for(image: Image | None) -> tuple[str, ...]:
    """The entry point an image starts when a manifest gives only args: its engine's, for the release its tag names
    (vllm/vllm-openai before 0.11.1 starts the api_server module, which takes no positional model)."""
    if image is None or not image.engine:
        return ()
    return engine_units.get(image.engine).image_entry_for(image.version)


def with_release(image: Image, version: str) -> str:
    """The image reference that runs `version` instead: the same repository and tag suffix (a `-cu129` build stays
    one), the digest dropped (it pinned the old release)."""
    tag = image.tag or ""
    if image.version and image.version in tag:
        new_tag = tag.replace(image.version, version, 1)
    else:
        new_tag = "v" + version
    name = image.ref.partition("@")[0]
    if image.tag is not None:
        name = name[: len(name) - len(image.tag) - 1]
    return f"{name}:{new_tag}"
