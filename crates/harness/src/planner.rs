//! What `plan` may read: the experiment's settings, the mode, `--repeat`, the
//! machine; and which settings it read.

use oslab_model::machine::MachineInfo;

use super::context::RunConfig;
use oslab_settings::{Choices, Kind, Setting};

/// What `plan` may read. It records which settings were read.
pub struct Planner<'a> {
    experiment: &'static str,
    config: &'a RunConfig,
    pub machine: &'a MachineInfo,
    read: Vec<&'static str>,
}

impl<'a> Planner<'a> {
    pub fn new(experiment: &'static str, config: &'a RunConfig, machine: &'a MachineInfo) -> Self {
        Planner {
            experiment,
            config,
            machine,
            read: Vec::new(),
        }
    }

    pub fn quick(&self) -> bool {
        self.config.quick()
    }

    /// A declared setting: the `--set` value given for this experiment, else the
    /// default for the mode.
    pub fn get<K: Kind>(&mut self, setting: &'static Setting<K>) -> K::Value {
        self.read.push(setting.name);
        self.config
            .sets
            .get(&(self.experiment.to_string(), setting.name.to_string()))
            .and_then(|v| v.get::<K>().cloned())
            .unwrap_or_else(|| setting.default_for(self.quick()))
    }

    /// A declared setting's `--set` value, or None where it was not given (the
    /// plan then chooses from the machine).
    pub fn given<K: Kind>(&mut self, setting: &'static Setting<K>) -> Option<K::Value> {
        self.read.push(setting.name);
        self.config
            .sets
            .get(&(self.experiment.to_string(), setting.name.to_string()))
            .and_then(|v| v.get::<K>().cloned())
    }

    /// A [`Choices`] setting whose quick default is `quick` (a static setting
    /// cannot hold a non-empty list): the names given, else `quick` in quick
    /// mode, else all of them.
    pub fn choices_quick(
        &mut self,
        setting: &'static Setting<Choices>,
        quick: &[&'static str],
    ) -> Vec<&'static str> {
        let given = self
            .config
            .sets
            .contains_key(&(self.experiment.to_string(), setting.name.to_string()));
        let v = self.choices(setting);
        if self.quick() && !given {
            quick.to_vec()
        } else {
            v
        }
    }

    /// A [`Choices`] setting: the names chosen, all of them by default.
    pub fn choices(&mut self, setting: &'static Setting<Choices>) -> Vec<&'static str> {
        let v = self.get(setting);
        if v.is_empty() {
            setting.names.to_vec()
        } else {
            v
        }
    }

    /// The sample count: `--repeat` when given, else `quick` or `full`.
    pub fn samples(&self, quick: usize, full: usize) -> usize {
        self.config
            .repeat
            .unwrap_or(if self.quick() { quick } else { full })
            .max(1)
    }

    /// The names of the settings read so far.
    pub fn read(&self) -> &[&'static str] {
        &self.read
    }
}
