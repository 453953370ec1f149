// Anchor translation unit for the shared libtorch precompiled header (see
// cmake/CtDependencies.cmake); it defines nothing.
