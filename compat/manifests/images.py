"""Which engine release a container image runs, read from its reference: `vllm/vllm-openai:v0.11.0`,
`lmsysorg/sglang:v0.5.16-cu129`, a mirror's `registry.example.com/mirror/vllm/vllm-openai:v0.11.0`.

An engine's image naming (its repositories, how a tag spells the release, the entry point the image starts) is a
fact about the engine, kept with it: `NAMING` below is read through `naming(engine)` and `engines()` only, so that
it moves into the engine units (compat/engines/) as one field each without touching the readers. A tag that says
nothing (`latest`, `nightly`, a digest only, an image of another project) tells no release: the caller says so and
uses `--engine` when the user gave one. Nothing is guessed from a tag's look.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from compat.manifests.model import Image, Where


@dataclass(frozen=True)
class ImageNaming:
    """How one engine's published images are named."""

    repositories: tuple[str, ...]  # docker.io names without the registry ("vllm/vllm-openai"); a mirror's prefix is allowed
    tags: tuple[str, ...]  # regexes with a `version` group; the first that matches names the release
    entry: tuple[str, ...] = ()  # the ENTRYPOINT the image starts when a manifest gives only args ((): none usable)
    docs: str = ""  # where the naming is documented


RELEASE_TAG = r"^v?(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?(?:rc\d+)?)(?:[-_+].*)?$"

NAMING: dict[str, ImageNaming] = {
    # docs.vllm.ai deployment/docker: `vllm/vllm-openai:v<release>` (latest, nightly: no release); its Dockerfile's
    # last stage is `ENTRYPOINT ["vllm", "serve"]`, so a Deployment's args start with the model. The CPU images are
    # published on AWS ECR (docs.vllm.ai getting_started/installation/cpu), ROCm builds as rocm/vllm with the
    # release inside the tag (rocm6.3.1_vllm_0.8.5_20250513).
    "vllm": ImageNaming(
        repositories=("vllm/vllm-openai", "vllm/vllm-openai-rocm", "vllm/vllm-tpu",
                      "q9t5s3a7/vllm-cpu-release-repo", "q9t5s3a7/vllm-release-repo", "rocm/vllm"),
        tags=(RELEASE_TAG, r"_vllm_(?P<version>\d+\.\d+\.\d+(?:\.post\d+)?)"),
        entry=("vllm", "serve"),
        docs="https://docs.vllm.ai/en/stable/deployment/docker.html"),
    # docs.sglang.ai start/install (Docker): `lmsysorg/sglang:v<release>-cu<cuda>` (and -xeon, -rocm... builds);
    # the image has no server entry point: a manifest gives `python3 -m sglang.launch_server ...` as its command.
    "sglang": ImageNaming(
        repositories=("lmsysorg/sglang", "lmsysorg/sglang-rocm"),
        tags=(RELEASE_TAG,),
        docs="https://docs.sglang.ai/get_started/install.html"),
}

DOCKER_HUB = ("docker.io/", "index.docker.io/", "registry-1.docker.io/")


def engines() -> tuple[str, ...]:
    return tuple(NAMING)


def naming(engine: str) -> ImageNaming:
    return NAMING[engine]


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
    for engine, named in NAMING.items():
        for known in named.repositories:
            if repository == known or repository.endswith("/" + known):
                return engine
    return None


def _version(engine: str, tag: str | None) -> str | None:
    if not tag:
        return None
    for pattern in NAMING[engine].tags:
        found = re.search(pattern, tag)
        if found:
            return found.group("version")
    return None


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
