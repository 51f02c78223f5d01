//! A cell of writers on the testbed (policy x scenario x run), as wb.wcall and
//! sim.validate both run them: what a cell records (`record`), the settings both
//! experiments declare alike (`settings`), what the kernel's trace says of a cell
//! in the simulator's terms (`traced`), and the simulator's configuration for a
//! cell (`sim_config`).

pub mod record;
pub mod settings;
pub mod sim_config;
pub mod traced;
