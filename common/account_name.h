// Users and groups as messages name them. The client and fadd's start-up
// checks look a name up once per message; fadd's event loop keeps its own
// cached table (daemon/user_names.h), since a lookup may ask a directory
// service over the network.
#pragma once

#include <sys/types.h>

#include <string>

namespace fad {

/// The login name of `uid` ("alice"), or "uid 1234" when the passwd database has none.
std::string account_name(uid_t uid);
/// The login name with its number beside it ("alice (uid 1234)"), for messages
/// about who owns a path, where two machines' names may differ.
std::string account_name_with_uid(uid_t uid);
/// The name of group `gid`, or "gid 1234" when the group database has none.
std::string group_name(gid_t gid);

}  // namespace fad
