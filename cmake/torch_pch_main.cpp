// Anchor program for the libtorch precompiled header that executables reuse
// (see cmake/CtDependencies.cmake); it does nothing.

int main() {
  return 0;
}
