// fad-exec, the program every child of fadd runs first, and how fadd finds it.
//
// Boost.Process's launcher blocks fadd until its child has called exec: that
// is how it learns whether the exec failed. An exec is quick on a local disk,
// but a compiler a client names may lie on a network filesystem that stopped
// answering, and exec then waits in the kernel for as long as that lasts,
// freezing every build and client with fadd. So fadd execs fad-exec (beside
// itself, on a local disk), whose only job is to exec the real program: fadd's
// wait ends at once, and a hung filesystem stalls only the unit or probe that
// named a program on it.
//
// When the real exec fails, fad-exec prints one line starting with
// kExecFailure on stderr and exits with kExecFailureCode, like a shell.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace fad {

inline constexpr std::string_view kExecFailure = "fad-exec: cannot run ";
inline constexpr int kExecFailureCode = 127;

/// fad-exec beside this program (a build tree), else where the install puts
/// it relative to fadd (../libexec/fad by default); empty when neither is
/// executable.
std::string find_exec_helper();

/// `argv` as started through `helper` ("helper argv..."); `argv` itself when
/// `helper` is empty.
std::vector<std::string> through_exec_helper(const std::string& helper, const std::vector<std::string>& argv);

/// Why fad-exec could not run its program ("No such file or directory"), when
/// `output` is what a child that exited with kExecFailureCode printed and it
/// came from fad-exec; empty otherwise. At most 256 bytes.
std::string exec_failure_reason(std::string_view output);

}  // namespace fad
