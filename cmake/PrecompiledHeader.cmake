# attn_reuse_pch(<target>): compile <target> with the project's one precompiled header
# (attn/core/xt.hpp, built by the attn_pch target in common/). Building a PCH costs ~3 s, so one
# shared copy instead of one per target saves minutes on a 2-core laptop.
function(attn_reuse_pch target)
  target_precompile_headers(${target} REUSE_FROM attn_pch)
endfunction()
