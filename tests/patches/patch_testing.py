"""What every before/after patch test shares (LibCST's `CodemodTest` / `assertCodemod`, for patch modules),
and numbers-for-tensors stubs to run a patched forward without torch or vLLM.

    class TestMyPatch(PatchTest):
        PATCH = my_patch                 # the module under patches/<engine>/
        ROLE = "config"                  # the role find_files gives the file (per test: role=...)

        def test_adds_the_type(self):
            self.assert_patch(BEFORE, AFTER)

On whole files of a real release (taken as they are, not dedented): `assert_patched(patch, role, before, after)`,
or a module's own with its patch bound: `assert_patched = patched_by(patch, options={})`.
"""

from __future__ import annotations

import ast
import functools
import textwrap
from itertools import islice
from types import ModuleType, SimpleNamespace

import pytest

from compat.patches import FileNotAsExpected


def code(text: str) -> str:
    """A snippet as written in the test, dedented, without its first newline."""
    return textwrap.dedent(text).lstrip("\n")


def assert_patched(patch: ModuleType, role: str, before: str, after: str, options=None, *, filename: str | None = None) -> None:
    """The exact code after, from the code before; the result compiles, is recognised as fixed, and a second run
    changes nothing (compat patch's idempotence). `options` default to the patch's OPTIONS."""
    options = dict(patch.OPTIONS) if options is None else options
    assert not patch.has_fix(role, before, options), "the code before already counts as fixed"
    out = patch.transform(role, before, options)
    assert out == after, "\n" + out
    compile(out, filename or role, "exec")
    assert patch.has_fix(role, out, options)
    assert patch.transform(role, out, options) == out


def patched_by(patch: ModuleType, *roles: str, **defaults):
    """`assert_patched` with the patch (and a role, and options or a filename) bound: a test module's own."""
    return functools.partial(assert_patched, patch, *roles, **defaults)


class PatchTest:
    PATCH: ModuleType
    ROLE: str = ""

    def options(self, options=None) -> dict:
        return dict(self.PATCH.OPTIONS) if options is None else options

    def assert_patch(self, before: str, after: str, *, role: str | None = None, options=None) -> None:
        """The exact code after, from the code before; the result compiles, is recognised as fixed, and a
        second run changes nothing (compat patch's idempotence)."""
        assert_patched(self.PATCH, role or self.ROLE, code(before), code(after), self.options(options))

    def assert_fixed(self, source: str, *, role: str | None = None, options=None) -> None:
        """A file that already has the fix (upstream or an earlier run): recognised, and left byte for byte."""
        role, options = role or self.ROLE, self.options(options)
        source = code(source)
        assert self.PATCH.has_fix(role, source, options)
        assert self.PATCH.transform(role, source, options) == source

    def assert_refused(self, source: str, match: str, *, role: str | None = None, options=None, step: str = "has_fix") -> None:
        """A file that is not what the patch expects: FileNotAsExpected from `step` (has_fix or transform)."""
        role, options = role or self.ROLE, self.options(options)
        with pytest.raises(FileNotAsExpected, match=match):
            getattr(self.PATCH, step)(role, code(source), options)


# -- running a patched forward on numbers -------------------------------------------------------------
def patched_forward(source: str, class_name: str = "DeepseekV2Model", method: str = "forward", **names):
    """`class_name.method` of a patched module, compiled on its own with stub globals (no torch, no vLLM)."""
    tree = ast.parse(source)
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    func = next(n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == method)
    snippet = "from __future__ import annotations\n" + textwrap.dedent(ast.get_source_segment(source, func))
    namespace = {"islice": islice, **names}
    exec(compile(snippet, f"<{class_name}.{method}>", "exec"), namespace)
    return namespace[method]


class FakeDecoder:
    """Numbers instead of tensors: layer i turns (h, r) into (2 * (h + r) + i, h + r)."""

    def __init__(self, n_layers: int, aux=()):
        self.layers = [self._layer(i) for i in range(n_layers)]
        self.start_layer, self.end_layer = 0, n_layers
        self.aux_hidden_state_layers = tuple(aux)
        self.config = SimpleNamespace()

    @staticmethod
    def _layer(i):
        def layer(positions, hidden_states, residual, *extra):
            stream = hidden_states + (residual or 0)
            return 2 * stream + i, stream
        return layer

    def norm(self, hidden_states, residual):
        return hidden_states + residual, None

    def embed_input_ids(self, input_ids):  # releases that embed here, whatever inputs_embeds says
        return self.embeds

    get_input_embeddings = embed_input_ids

    def expected_aux(self, embeds: float) -> list[float]:
        """The residual stream entering each configured layer, computed without the patch."""
        out, h, r = [], embeds, None
        for i, layer in enumerate(self.layers):
            if i in self.aux_hidden_state_layers:
                out.append(h if r is None else h + r)
            h, r = layer(None, h, r)
        return out


PP_LAST = SimpleNamespace(is_first_rank=True, is_last_rank=True)


def run_forward(forward, decoder: FakeDecoder, embeds: float = 1.0):
    decoder.embeds = embeds
    return forward(decoder, input_ids=None, positions=None, intermediate_tensors=None, inputs_embeds=embeds)
