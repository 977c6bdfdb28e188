// How the shims hand failures to Rust: nothing throws across the C boundary; a C++
// exception becomes a malloc'd message (nullptr: success) that the caller frees.

#pragma once

#include <c10/util/Exception.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>

namespace cnb {

inline char* copy_message(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) {
    std::memcpy(out, text.c_str(), text.size() + 1);
  }
  return out;
}

// Runs `body`, turning any exception into an error message (nullptr: success);
// `where` names the library in the message of an exception of no known type.
template <typename F>
char* guarded(const char* where, F&& body) {
  try {
    body();
    return nullptr;
  } catch (const c10::Error& e) {
    return copy_message(e.what_without_backtrace());
  } catch (const std::exception& e) {
    return copy_message(e.what());
  } catch (...) {
    return copy_message(std::string("unknown C++ exception in ") + where);
  }
}

}  // namespace cnb
