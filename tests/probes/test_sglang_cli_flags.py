"""SGLang server arguments and CLI flags in the three definition styles, on trees the tests write."""

from __future__ import annotations

import textwrap

from compat.probes.sglang.cli_flags import cli_flags
from compat.probes.sglang._server_args import _build_from_pieces
from compat.probes.sglang.server_args import server_args
from compat.report import build_report

import probe_trees


def write_tree(root, files: dict[str, str]):
    """A fake release: sglang/__init__.py plus the given files (relative to root)."""
    return probe_trees.write_tree(root, "sglang", files, strip_first_newline=True)


line = probe_trees.line


ADD_ARGUMENT_STYLE = '''
import dataclasses
from typing import Optional

DRAFT_FORMATS = ["auto", "pt"]


@dataclasses.dataclass
class ServerArgs:
    model_path: str
    speculative_algorithm: Optional[str] = None
    speculative_draft_model_path: Optional[str] = None
    speculative_num_steps: int = 5
    speculative_ngram_capacity: int = 10 * 1000
    enable_multi_layer_eagle: bool = False

    @staticmethod
    def add_cli_args(parser):
        parser.add_argument("--model-path", type=str)
        parser.add_argument(
            "--speculative-algorithm",
            type=str,
            choices=["EAGLE", "EAGLE3", "NEXTN"],
        )
        parser.add_argument(
            "--speculative-draft-model-path",
            "--speculative-draft-model",
            type=str,
            choices=DRAFT_FORMATS,
        )
        parser.add_argument("--speculative-num-steps", type=int, default=ServerArgs.speculative_num_steps)
        parser.add_argument("--enable-multi-layer-eagle", action="store_true")
'''


def test_add_argument_style(tmp_path):
    tree = write_tree(tmp_path, {"sglang/srt/server_args.py": ADD_ARGUMENT_STYLE})
    sa = server_args(tree)
    assert sa["style"] == "add_argument"
    assert sa["location"] == f"sglang/srt/server_args.py:{line(ADD_ARGUMENT_STYLE, 'class ServerArgs')}"
    assert [f["name"] for f in sa["fields"]] == [
        "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps",
        "speculative_ngram_capacity", "enable_multi_layer_eagle",
    ]
    capacity = next(f for f in sa["fields"] if f["name"] == "speculative_ngram_capacity")
    assert capacity["default"] == 10000 and capacity["location"] == f"sglang/srt/server_args.py:{line(ADD_ARGUMENT_STYLE, 'speculative_ngram_capacity:')}"
    assert sa["algorithms"] == ["EAGLE", "EAGLE3", "NEXTN"]
    assert sa["algorithms_source"] == "argparse choices"
    # the add_argument call that carries the choices
    call_line = line(ADD_ARGUMENT_STYLE, '"--speculative-algorithm",') - 1
    assert sa["algorithms_location"] == f"sglang/srt/server_args.py:{call_line}"

    flags = {f["name"]: f for f in cli_flags(tree)}
    assert "--model-path" not in flags  # not a speculative flag
    draft = flags["--speculative-draft-model-path"]
    assert draft["aliases"] == ["--speculative-draft-model"]
    assert draft["choices"] == ["auto", "pt"]  # module constant resolved
    assert flags["--speculative-num-steps"]["default"] == 5  # default=ServerArgs.x -> the field default
    assert flags["--enable-multi-layer-eagle"]["type"] == "bool"
    assert flags["--enable-multi-layer-eagle"]["default"] is False
    assert {f["style"] for f in flags.values()} == {"add_argument"}


ANNOTATED_STYLE = '''
import dataclasses
from typing import Literal, Optional

from sglang.srt.arg_groups.arg_utils import A, Arg, add_cli_args_from_dataclass


@dataclasses.dataclass
class ServerArgs:
    speculative_algorithm: A[Optional[str], "Speculative algorithm, free string."] = None
    speculative_draft_model_path: A[
        Optional[str],
        Arg(help="Draft weights.", aliases=["--speculative-draft-model"]),
    ] = None
    speculative_attention_mode: A[Literal["prefill", "decode"], "Which backend mode."] = "prefill"
    speculative_adaptive: A[bool, "Adapt the steps."] = False
    speculative_hidden_knob: A[int, Arg(no_cli=True)] = 3
    speculative_plain: Optional[int] = None

    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)
        parser.add_argument("--speculative-plain", type=int, dest="speculative_plain")
'''

SPEC_ENUM = '''
from enum import Enum, auto


class SpeculativeAlgorithm(Enum):
    EAGLE = auto()
    EAGLE3 = auto()
    NONE = auto()

    @classmethod
    def register(cls, name):
        return name
'''


def test_annotated_dataclass_style(tmp_path):
    tree = write_tree(tmp_path, {
        "sglang/srt/server_args.py": ANNOTATED_STYLE,
        "sglang/srt/speculative/spec_info.py": SPEC_ENUM,
    })
    sa = server_args(tree)
    assert sa["style"] == "annotated_dataclass"
    assert sa["algorithms"] == ["EAGLE", "EAGLE3"]  # enum members, NONE left out
    assert sa["algorithms_location"] == f"sglang/srt/speculative/spec_info.py:{line(SPEC_ENUM, 'class SpeculativeAlgorithm')}"
    assert sa["algorithm_enum"]["extensible"] is True

    flags = {f["name"]: f for f in cli_flags(tree)}
    assert "--speculative-hidden-knob" not in flags  # Arg(no_cli=True)
    assert flags["--speculative-draft-model-path"]["aliases"] == ["--speculative-draft-model"]
    assert flags["--speculative-draft-model-path"]["location"] == f"sglang/srt/server_args.py:{line(ANNOTATED_STYLE, 'speculative_draft_model_path:')}"
    assert flags["--speculative-attention-mode"]["choices"] == ["prefill", "decode"]  # Literal -> choices
    assert flags["--speculative-attention-mode"]["type"] == "str"
    assert flags["--speculative-adaptive"]["type"] == "bool"  # bool -> store_true
    assert flags["--speculative-algorithm"]["choices"] is None
    assert flags["--speculative-algorithm"]["style"] == "annotated_dataclass"
    # a plain field registered by hand keeps its add_argument definition
    assert flags["--speculative-plain"]["style"] == "add_argument"


NAMESPACE_SERVER_ARGS = '''
import msgspec

from sglang.srt.arg_groups.arg_utils import add_cli_args_from_dataclass
from sglang.srt.arg_groups.fields.spec import Spec
from sglang.srt.arg_groups.fields.model import Model


class ServerArgs:
    host: str = "127.0.0.1"

    @staticmethod
    def add_cli_args(parser):
        add_cli_args_from_dataclass(parser, ServerArgs)


ServerArgs = msgspec.defstruct("ServerArgs", [])
'''

NAMESPACE_SPEC = '''
from typing import Optional

import msgspec

from sglang.srt.arg_groups.arg_utils import A, Arg
from sglang.srt.arg_groups.choices import LOAD_FORMATS


class Spec(msgspec.Struct):
    _NS_PATH = "spec"
    speculative_algorithm: A[Optional[str], "Free string."] = None
    speculative_draft_load_format: A[Optional[str], Arg(help="Format.", choices=LOAD_FORMATS)] = None
'''

NAMESPACE_MODEL = '''
from typing import Optional

import msgspec

from sglang.srt.arg_groups.arg_utils import A


class Model(msgspec.Struct):
    _NS_PATH = "model"
    model_path: A[str, "Weights."] = ""
    decrypted_draft_config_file: A[Optional[str], "Decrypted draft config."] = None
'''


def test_msgspec_namespace_style(tmp_path):
    tree = write_tree(tmp_path, {
        "sglang/srt/server_args.py": NAMESPACE_SERVER_ARGS,
        "sglang/srt/arg_groups/fields/spec.py": NAMESPACE_SPEC,
        "sglang/srt/arg_groups/fields/model.py": NAMESPACE_MODEL,
        "sglang/srt/arg_groups/choices.py": 'LOAD_FORMATS = ["auto", "safetensors"]\n',
        "sglang/srt/speculative/spec_info.py": SPEC_ENUM,
    })
    sa = server_args(tree)
    assert sa["style"] == "msgspec_namespace"
    # the namespace, not ServerArgs
    assert sa["location"] == f"sglang/srt/arg_groups/fields/spec.py:{line(NAMESPACE_SPEC, 'class Spec')}"
    assert sa["declared_in"] == "Spec"
    names = {f["name"]: f for f in sa["fields"]}
    assert set(names) == {"speculative_algorithm", "speculative_draft_load_format", "decrypted_draft_config_file"}
    assert names["decrypted_draft_config_file"]["namespace"] == "model"

    flags = {f["name"]: f for f in cli_flags(tree)}
    assert flags["--speculative-draft-load-format"]["choices"] == ["auto", "safetensors"]  # followed the import
    assert flags["--speculative-draft-load-format"]["style"] == "msgspec_namespace"
    assert "--model-path" not in flags


def test_missing_server_args(tmp_path):
    tree = write_tree(tmp_path, {"sglang/srt/other.py": "X = 1\n"})
    assert server_args(tree) == {"present": False, "reason": "no ServerArgs class under sglang/srt"}
    assert cli_flags(tree) == []


def test_unparseable_speculative_flag_is_an_absent_fact(tmp_path):
    # PEP 701 (Python 3.12): the same quotes nested in an f-string, which Python 3.11 cannot parse
    text = ADD_ARGUMENT_STYLE.replace(
        'parser.add_argument("--speculative-num-steps", type=int,',
        'parser.add_argument("--speculative-num-steps", help=f"{", ".join(DRAFT_FORMATS)}", type=int,',
    )
    assert text != ADD_ARGUMENT_STYLE
    tree = write_tree(tmp_path, {"sglang/srt/server_args.py": text})
    report = build_report(tree)
    assert report["server_args"]["present"] is False
    assert report["server_args"]["error"].startswith("sglang/srt/server_args.py:")
    assert report["probe_errors"] == []  # a property of the release, not a crash


def test_newer_syntax_elsewhere_in_server_args_is_not_read(tmp_path):
    # PEP 695 generics in a helper: not a piece the probes read, so the flags still come out
    tree = write_tree(tmp_path, {
        "sglang/srt/server_args.py": ADD_ARGUMENT_STYLE + "\n\ndef first[T](items: list[T]) -> T:\n    return items[0]\n",
    })
    assert server_args(tree)["algorithms"] == ["EAGLE", "EAGLE3", "NEXTN"]
    assert {f["name"] for f in cli_flags(tree)} >= {"--speculative-algorithm", "--speculative-draft-model-path"}


def test_field_with_a_column_zero_string_still_read(tmp_path):
    # a help text whose continuation sits at column 0: the statement cannot be cut at the
    # next line of its indentation, so the reader grows the piece until it parses
    text = ADD_ARGUMENT_STYLE.replace(
        "    speculative_num_steps: int = 5\n",
        '    speculative_num_steps: A[int, """Steps.\nSecond line at column zero."""] = 7\n',
    )
    assert text != ADD_ARGUMENT_STYLE
    tree = write_tree(tmp_path, {"sglang/srt/server_args.py": "from x import A\n" + textwrap.dedent(text).lstrip("\n")})
    steps = next(f for f in server_args(tree)["fields"] if f["name"] == "speculative_num_steps")
    assert steps["default"] == 7 and steps["type"] == "int"
    flags = {f["name"]: f for f in cli_flags(tree)}
    assert flags["--speculative-num-steps"]["default"] == 7  # default=ServerArgs.speculative_num_steps
    assert flags["--speculative-num-steps"]["style"] == "add_argument"
    assert "--enable-multi-layer-eagle" in flags  # after the column-0 line: the class did not end there
    # and it was read piecewise, not by the whole-file fallback (which costs ~50 ms on real releases)
    assert _build_from_pieces(tree, "sglang/srt/server_args.py") is not None
