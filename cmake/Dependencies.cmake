# Every dependency comes from Debian packages (see scripts/install-deps.sh); nothing is downloaded.
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(doctest REQUIRED)
# OpenBLAS for the GEMMs of chapters 04-07 (cblas_sgemm). Its CMake config defines variables,
# not a target; wrap them in one.
find_package(OpenBLAS REQUIRED)
if(NOT TARGET attn_openblas)
  add_library(attn_openblas INTERFACE)
  target_include_directories(attn_openblas SYSTEM INTERFACE ${OpenBLAS_INCLUDE_DIRS})
  target_link_libraries(attn_openblas INTERFACE ${OpenBLAS_LIBRARIES})
endif()
# Chapter 13's tokenizer: JSON for vocab.json (header-only) and PCRE2 for GPT-2's
# pre-tokenization pattern (std::regex has no Unicode classes such as \p{L}). PCRE2 ships a
# pkg-config file, not a CMake config.
find_package(nlohmann_json 3.10 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
