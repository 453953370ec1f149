#pragma once

#include <string>
#include <string_view>

namespace clustertwin {

/// A user's value as shown in a one-line error message: in single quotes,
/// cut after 60 characters ("..."), with newlines as \n and other control
/// characters as \xNN so that the message stays on one line.
std::string quote_for_message(std::string_view text);

}  // namespace clustertwin
