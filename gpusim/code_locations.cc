// Source lines and variable names for the access checks' reports; see code_locations.h.
#include "gpusim/code_locations.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

namespace gpusim::detail {
namespace {

std::string Demangle(const char* name) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> text(abi::__cxa_demangle(name, nullptr, nullptr, &status), std::free);
  return status == 0 && text != nullptr ? std::string(text.get()) : std::string(name);
}

// "/src/kernels/x.cu:61 (discriminator 2)" -> "kernels/x.cu:61".
std::string Tidy(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  const size_t discriminator = s.find(" (discriminator");
  if (discriminator != std::string::npos) s.erase(discriminator);
  return SourcePath(s);
}

}  // namespace

std::string SourcePath(const std::string& path) {
#if defined(XMLT_SOURCE_DIR)
  const std::string root = XMLT_SOURCE_DIR;
  if (path.compare(0, root.size(), root) == 0) return path.substr(root.size());
#endif
  return path;
}

std::string DescribeCode(const void* pc) {
  Dl_info info{};
  if (dladdr(pc, &info) == 0 || info.dli_fname == nullptr) return "an unknown instruction";
  // A position-independent module's line tables are in offsets from its load address.
  const auto* header = static_cast<const Elf64_Ehdr*>(info.dli_fbase);
  const uintptr_t address = reinterpret_cast<uintptr_t>(pc) - 1 -
                            (header->e_type == ET_DYN ? reinterpret_cast<uintptr_t>(info.dli_fbase) : 0);
  const std::string module = info.dli_fname[0] != '\0' ? info.dli_fname : "/proc/self/exe";
  char hex[32];
  std::snprintf(hex, sizeof hex, "0x%zx", size_t(address));
  const std::string command = "addr2line -i -e '" + module + "' " + hex + " 2>/dev/null";
  std::vector<std::string> lines;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    char buffer[1024];
    while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) lines.push_back(Tidy(buffer));
    pclose(pipe);
  }
  std::string text;
  for (const std::string& line : lines) {
    if (line.empty() || line.rfind("??", 0) == 0) continue;
    text += text.empty() ? line : " (inlined into " + line + ")";
  }
  if (!text.empty()) return text;
  const std::string symbol = info.dli_sname != nullptr ? " in " + Demangle(info.dli_sname) : "";
  return std::string(hex) + symbol + " of " + module + " (no line table)";
}

std::string DescribeThreadLocal(size_t offset, size_t* variable_offset) {
  std::ifstream file("/proc/self/exe", std::ios::binary);
  if (!file) return {};
  Elf64_Ehdr header;
  if (!file.read(reinterpret_cast<char*>(&header), sizeof header) || std::memcmp(header.e_ident, ELFMAG, SELFMAG) != 0 ||
      header.e_ident[EI_CLASS] != ELFCLASS64)
    return {};
  std::vector<Elf64_Shdr> sections(header.e_shnum);
  file.seekg(std::streamoff(header.e_shoff));
  if (!file.read(reinterpret_cast<char*>(sections.data()), std::streamsize(sections.size() * sizeof(Elf64_Shdr))))
    return {};
  for (const Elf64_Shdr& section : sections) {
    if (section.sh_type != SHT_SYMTAB || section.sh_link >= sections.size()) continue;
    const Elf64_Shdr& strings = sections[section.sh_link];
    std::vector<char> names(strings.sh_size);
    file.seekg(std::streamoff(strings.sh_offset));
    file.read(names.data(), std::streamsize(names.size()));
    std::vector<Elf64_Sym> symbols(section.sh_size / sizeof(Elf64_Sym));
    file.seekg(std::streamoff(section.sh_offset));
    file.read(reinterpret_cast<char*>(symbols.data()), std::streamsize(symbols.size() * sizeof(Elf64_Sym)));
    for (const Elf64_Sym& symbol : symbols) {
      if (ELF64_ST_TYPE(symbol.st_info) != STT_TLS || symbol.st_name >= names.size()) continue;
      if (offset < symbol.st_value || offset >= symbol.st_value + symbol.st_size) continue;
      *variable_offset = offset - symbol.st_value;
      return Demangle(&names[symbol.st_name]);
    }
  }
  return {};
}

}  // namespace gpusim::detail
