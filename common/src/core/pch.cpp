// An empty translation unit: it only exists so CMake can build the shared precompiled header
// (attn/core/xt.hpp) once, for every target to reuse (see cmake/PrecompiledHeader.cmake).
