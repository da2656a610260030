"""vllm-cpu-attn-block16 (patches/vllm/cpu_attn_block16.py): CPU_ATTN also declares block size 16; before
and after, a release that accepts 16 already, and a kernel without the block-16 path."""

from __future__ import annotations

from compat.patches.vllm import cpu_attn_block16
from patch_testing import PatchTest

BEFORE = '''
    class CPUAttentionBackend(AttentionBackend):
        @staticmethod
        def get_supported_kernel_block_sizes() -> list[int | MultipleOf]:
            return [MultipleOf(32)]


    def _get_attn_isa(block_size):
        return "amx" if block_size % 32 == 0 else "vec16"
'''

AFTER = '''
    class CPUAttentionBackend(AttentionBackend):
        @staticmethod
        def get_supported_kernel_block_sizes() -> list[int | MultipleOf]:
            # compat patch vllm-cpu-attn-block16: the kernel's vec16 path serves CPU_MLA's block size
            return [16, MultipleOf(32)]


    def _get_attn_isa(block_size):
        return "amx" if block_size % 32 == 0 else "vec16"
'''


class TestCpuAttnBlock16(PatchTest):
    PATCH = cpu_attn_block16
    ROLE = "backend"

    def test_also_declares_block_16(self):
        self.assert_patch(BEFORE, AFTER)

    def test_a_release_that_accepts_16_already_is_left_alone(self):
        # 0.28.0 declared MultipleOf(16): 16 is accepted, nothing to do.
        self.assert_fixed(BEFORE.replace("MultipleOf(32)", "MultipleOf(16)"))
        self.assert_fixed(BEFORE.replace("[MultipleOf(32)]", "[16, 32]"))

    def test_a_kernel_without_a_block_16_path_is_refused(self):
        self.assert_refused(BEFORE.replace('"vec16"', '"vec"'), "vec16")

    def test_a_method_not_ending_in_one_list_is_refused(self):
        self.assert_refused(BEFORE.replace("return [MultipleOf(32)]", "return sizes()"), "does not end in one `return")

    def test_a_file_without_the_backend_method_is_refused(self):
        self.assert_refused(BEFORE.replace("get_supported_kernel_block_sizes", "block_sizes"),
                            "no CPUAttentionBackend.get_supported_kernel_block_sizes")
