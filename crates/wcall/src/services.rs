//! Services started by systemd: which group root gives a system service's
//! processes (`oslab wcall daemon --service UNIT=GROUP`), and which processes run
//! in a service at all, so the governor leaves them in their unit's cgroup.
//!
//! systemd knows a service by its cgroup: a process moved out of it is one the
//! service manager no longer stops, and one moved under the daemon's own unit is
//! one that stopping the daemon kills. So a process in any `.service` is governed
//! where it is, never placed in the governor's group cgroups.
//!
//! Who decides the group: root, twice. Root names the unit in the daemon's
//! command line (its unit file), and only root can put a process into a system
//! service's cgroup: they live under `/system.slice` of the hierarchy, which only
//! root may write. A unit is matched only there, with nothing but slices before
//! it (`/system.slice/system-postgresql.slice/postgresql@15-main.service`), so a
//! user's own service manager (`/user.slice/.../user@1000.service/...`) or a
//! subtree delegated to a user cannot make a cgroup that passes for it.

use crate::shm::{GROUP_NAMES, GROUPS, group_number};

/// `UNIT=GROUP`: the processes of system service UNIT are in GROUP. UNIT ends in
/// `.service`; a template's instances are named with `@*` (`postgresql@*.service`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceRule {
    unit: String,
    pub group: u32,
}

impl std::str::FromStr for ServiceRule {
    type Err = String;

    /// What `--service` takes; the error says what is wrong with it, for clap
    /// to put after the option and the value.
    fn from_str(text: &str) -> Result<ServiceRule, String> {
        let hint = "give UNIT=GROUP such as postgresql@*.service=rt-high";
        let Some((unit, group)) = text.split_once('=') else {
            return Err(hint.into());
        };
        let Some(group) = group_number(group).filter(|g| (*g as usize) < GROUPS) else {
            return Err(format!(
                "no group '{group}' (use rt-high, rt-low or normal)"
            ));
        };
        let name_ok = unit.ends_with(".service")
            && unit.len() > ".service".len()
            && !unit.contains('/')
            && unit.matches('*').count() <= 1
            && (!unit.contains('*') || unit.contains("@*."));
        if !name_ok {
            return Err(format!("'{unit}' is not a service unit's name ({hint})"));
        }
        Ok(ServiceRule {
            unit: unit.into(),
            group,
        })
    }
}

impl ServiceRule {
    pub fn matches(&self, unit: &str) -> bool {
        match self.unit.split_once('*') {
            None => self.unit == unit,
            Some((before, after)) => {
                unit.len() > before.len() + after.len()
                    && unit.starts_with(before)
                    && unit.ends_with(after)
                    && !unit[before.len()..unit.len() - after.len()].contains('@')
            }
        }
    }
}

impl std::fmt::Display for ServiceRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.unit, GROUP_NAMES[self.group as usize])
    }
}

/// The service-manager path of a process, from its /proc/PID/cgroup: the cgroup
/// v2 line where it is not the root, else the `name=systemd` line (a v1 or hybrid
/// machine).
pub fn manager_path(cgroup_file: &str) -> Option<&str> {
    let path_of = |prefix: &str| {
        cgroup_file
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .filter(|p| p.starts_with('/') && *p != "/")
    };
    path_of("0::").or_else(|| {
        cgroup_file
            .lines()
            .find_map(|l| l.split_once(":name=systemd:").map(|(_, p)| p))
            .filter(|p| p.starts_with('/') && *p != "/")
    })
}

/// The first service along the path, wherever it is (a user's services
/// included): the unit whose cgroup the process must stay in.
pub fn any_service(path: &str) -> Option<&str> {
    path.split('/').find(|c| c.ends_with(".service"))
}

/// The service whose cgroup a process at `path` must stay in, unless the path
/// is in the governor's own group cgroups (`groups`: their folder, as a path of
/// the hierarchy). Under systemd those are inside the daemon's unit, but a
/// process there was placed from outside every service (or was born to one
/// that was), and goes back out when the governor stops.
pub fn service_outside<'a>(path: &'a str, groups: Option<&str>) -> Option<&'a str> {
    let placed = groups.is_some_and(|g| {
        path.strip_prefix(g)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
    });
    if placed { None } else { any_service(path) }
}

/// The system service the path belongs to: `/system.slice`, then only slices,
/// then the unit (then anything a delegated unit made inside it).
pub fn system_service(path: &str) -> Option<&str> {
    let mut parts = path.strip_prefix("/system.slice/")?.split('/');
    parts
        .find(|c| !c.ends_with(".slice"))
        .filter(|c| c.ends_with(".service"))
}

/// Where a process runs, as far as services go.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InService {
    /// The service whose cgroup it must stay in.
    pub unit: Option<String>,
    /// The group root gave that system service, where a rule names it.
    pub given: Option<u32>,
}

impl InService {
    /// Where the process whose /proc/PID/cgroup is `cgroup_file` runs, under
    /// `rules`, the governor's group cgroups being `groups` (see
    /// [`service_outside`]).
    pub fn of(cgroup_file: &str, rules: &[ServiceRule], groups: Option<&str>) -> InService {
        let Some(path) = manager_path(cgroup_file) else {
            return InService::default();
        };
        let given = system_service(path)
            .and_then(|unit| rules.iter().find(|r| r.matches(unit)))
            .map(|r| r.group);
        InService {
            unit: service_outside(path, groups).map(str::to_string),
            given,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> Vec<ServiceRule> {
        vec![
            "postgresql@*.service=rt-high".parse().unwrap(),
            "backup.service=normal".parse().unwrap(),
        ]
    }

    #[test]
    fn a_rule_names_a_service_and_a_group() {
        for bad in [
            "postgresql.service",
            "postgresql.service=fast",
            "postgresql=rt-high",
            "*.service=rt-high",
            "a/b.service=rt-high",
            ".service=rt-high",
            "pg@*x*.service=rt-high",
        ] {
            assert!(bad.parse::<ServiceRule>().is_err(), "{bad}");
        }
        let r = &rules()[0];
        assert_eq!(
            r.to_string().parse::<ServiceRule>().as_ref(),
            Ok(r),
            "reads back"
        );
        let aliased: ServiceRule = "b.service=HIGH".parse().unwrap();
        assert_eq!(aliased.to_string(), "b.service=rt-high");
        assert_eq!(r.group, 0);
        assert_eq!(r.to_string(), "postgresql@*.service=rt-high");
        assert!(r.matches("postgresql@15-main.service"));
        assert!(!r.matches("postgresql@.service"));
        assert!(!r.matches("postgresql.service"));
        assert!(!r.matches("postgresql@a@b.service"));
        assert!(rules()[1].matches("backup.service"));
        assert!(!rules()[1].matches("backup2.service"));
    }

    #[test]
    fn only_a_system_service_is_given_its_group() {
        let v2 = "0::/system.slice/system-postgresql.slice/postgresql@15-main.service\n";
        assert_eq!(
            InService::of(v2, &rules(), None),
            InService {
                unit: Some("postgresql@15-main.service".into()),
                given: Some(0)
            }
        );
        let hybrid = "9:name=systemd:/system.slice/backup.service\n4:memory:/x\n0::/\n";
        assert_eq!(InService::of(hybrid, &rules(), None).given, Some(2));
        // a user's manager, and a delegated subtree, make look-alike cgroups
        for path in [
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/postgresql@15-main.service",
            "0::/delegated/system.slice/postgresql@15-main.service",
            "0::/system.slice/bob.service/system.slice/postgresql@15-main.service",
        ] {
            let s = InService::of(path, &rules(), None);
            assert_eq!(s.given, None, "{path}");
            assert!(s.unit.is_some(), "{path} stays where it is");
        }
        assert_eq!(
            InService::of("0::/\n4:memory:/\n", &rules(), None),
            InService::default()
        );
        assert_eq!(
            InService::of(
                "0::/user.slice/user-1000.slice/session-3.scope\n",
                &rules(),
                None
            ),
            InService::default(),
            "a login session is no service"
        );
    }

    #[test]
    fn a_process_in_the_governors_own_groups_is_in_no_service() {
        let groups = Some("/system.slice/oslab-wcall.service/oslab-wcall-40");
        let placed = "0::/system.slice/oslab-wcall.service/oslab-wcall-40/normal\n";
        assert_eq!(
            InService::of(placed, &rules(), groups),
            InService::default()
        );
        assert_eq!(
            InService::of(placed, &rules(), None).unit.as_deref(),
            Some("oslab-wcall.service"),
            "without the governor's word it is in the daemon's unit"
        );
        // the daemon's own leaf, and another governor's groups, are in the unit
        for path in [
            "0::/system.slice/oslab-wcall.service/oslab-wcall-40-home\n",
            "0::/system.slice/oslab-wcall.service/oslab-wcall-4/normal\n",
        ] {
            assert_eq!(
                InService::of(path, &rules(), groups).unit.as_deref(),
                Some("oslab-wcall.service"),
                "{path}"
            );
        }
    }
}
