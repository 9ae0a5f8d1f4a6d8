# Every dependency comes from Debian packages (see scripts/install-deps.sh); nothing is downloaded.
find_package(xtl REQUIRED)
find_package(xtensor REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(doctest REQUIRED)
